"""No reference in the repository points at a file it does not contain.

Scans README.md, docs/ and every other tracked text file (for Python files: comments and
docstrings) for relative Markdown links, resolved from the file's folder, and for repository paths
such as ``docs/tolerances.md``, ``scripts/equivalence/`` or ``README.md``, resolved from the
repository root. Not required to exist: paths git ignores (output the tools write, such as the
applied checkout ``upstream/StreamPETR``) and paths of an upstream tree, written "StreamPETR's
docs/setup.md". Patch files are upstream's text and are not scanned. A Markdown link's ``#anchor``
must name a heading of the page it points at, and docs/README.md (the index) links every page of docs/.
"""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import tokenize
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP_DIRS = ("constraints", "docs", "overlay", "patches", "requirements", "scripts", "tests", "upstream")
TEXT_SUFFIXES = {".md", ".py", ".txt", ".toml", ".cfg", ".ini", ".yaml", ".yml", ""}
MD_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
# a top-level folder of this repository followed by a path, not itself the tail of a longer path
REPO_PATH = re.compile(r"(?<![\w./~$-])((?:" + "|".join(TOP_DIRS) + r")/[\w./-]*[\w/])")
# an upper-case Markdown file at the root, as README.md or a design guide would be named
ROOT_DOC = re.compile(r"(?<![\w./~$-])([A-Z][A-Z0-9_-]*\.md)\b")
UPSTREAM_OWNER = re.compile(r"(?:StreamPETR|upstream|mmdet3d|mmcv)'s `?$")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def text_files(root: Path) -> list[Path]:
    """Tracked files plus untracked ones git does not ignore (new docs are checked before commit)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    paths = {root / p for p in out.split("\0") if p}
    return sorted(p for p in paths if p.suffix in TEXT_SUFFIXES and p.is_file())


def prose_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of what a reader reads as prose: a Python file's comments and docstrings,
    any other file whole."""
    text = path.read_text(errors="replace")
    if path.suffix != ".py":
        yield from enumerate(text.splitlines(), 1)
        return
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield from enumerate(doc.splitlines(), node.body[0].lineno)


def references(root: Path, path: Path) -> Iterator[tuple[int, str, Path]]:
    """(line number, the reference as written, the path it resolves to) for every reference in ``path``."""
    for number, line in prose_lines(path):
        found: dict[Path, str] = {}  # one entry per file a line names (a link's text often repeats it)
        if path.suffix == ".md":
            for target in MD_LINK.findall(line):
                target = target.split("#", 1)[0]
                if target and ":" not in target:  # not a URL, not a bare anchor
                    found.setdefault((path.parent / target).resolve(), target)
        for match in (*REPO_PATH.finditer(line), *ROOT_DOC.finditer(line)):
            if not UPSTREAM_OWNER.search(line[: match.start()]):
                found.setdefault((root / match.group(1)).resolve(), match.group(1))
        for resolved, target in found.items():
            yield number, target, resolved


def ignored(root: Path, paths: list[str]) -> set[str]:
    """The ``paths`` (relative to ``root``) that git ignores, as files or as folders."""
    if not paths:
        return set()
    queries = [q for p in paths if not p.startswith("..") for q in (p, p + "/")]  # git refuses "../x"
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"], cwd=root, input="\n".join(queries),
        capture_output=True, text=True,
    )  # fmt: skip
    return {p.rstrip("/") for p in done.stdout.splitlines()} if done.returncode in (0, 1) else set()


def dangling(root: Path, files: Iterable[Path]) -> tuple[list[str], int]:
    """``file:line: reference`` for each reference to a missing path, and how many references were seen."""
    missing: list[tuple[str, str]] = []
    seen = 0
    for path in files:
        for number, target, resolved in references(root, path):
            seen += 1
            if not resolved.exists():
                where = f"{path.relative_to(root)}:{number}: {target}"
                missing.append((where, os.path.relpath(resolved, root.resolve())))
    skip = ignored(root, sorted({rel for _, rel in missing}))
    return [where for where, rel in missing if rel not in skip], seen


def anchors(path: Path) -> set[str]:
    """The ``#anchor`` of every heading of a Markdown file, as GitHub makes them: lower case, punctuation
    dropped, spaces as hyphens, ``-1``, ``-2`` ... after repeats; headings inside code fences do not count."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in path.read_text(errors="replace").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        heading = None if fenced else HEADING.match(line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
            out.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return out


def broken_anchors(root: Path, files: Iterable[Path]) -> list[str]:
    """``file:line: link`` for each Markdown link whose ``#anchor`` is no heading of the page it names."""
    broken = []
    for path in (f for f in files if f.suffix == ".md"):
        for number, line in prose_lines(path):
            for target in MD_LINK.findall(line):
                page, _, anchor = target.partition("#")
                resolved = (path.parent / page).resolve() if page else path
                checked = anchor and ":" not in page and resolved.suffix == ".md" and resolved.is_file()
                if checked and anchor not in anchors(resolved):
                    broken.append(f"{path.relative_to(root)}:{number}: {target}")
    return broken


def test_every_referenced_file_exists() -> None:
    files = [f for f in text_files(ROOT) if f != Path(__file__)]  # this file's examples are made up
    missing, seen = dangling(ROOT, files)
    assert not missing, "references to files the repository does not contain:\n" + "\n".join(missing)
    assert seen > 50  # the scan really read the docs: the README alone names dozens of paths
    readme = {target for _, target, _ in references(ROOT, ROOT / "README.md")}
    assert {"docs/README.md", "docs/tolerances.md", "docs/equivalence.md", "scripts/synthdata/"} <= readme


def test_every_link_anchor_exists() -> None:
    docs = sorted((ROOT / "docs").glob("*.md"))
    assert not broken_anchors(ROOT, [ROOT / "README.md", *docs])
    assert "evaluate" in anchors(ROOT / "docs" / "training.md")  # the front page links it


def test_the_docs_index_lists_every_page() -> None:
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / t.split("#", 1)[0]).resolve() for t in MD_LINK.findall(index.read_text())}
    pages = {p.resolve() for p in (ROOT / "docs").glob("*.md")} - {index.resolve()}
    unlisted = sorted(p.name for p in pages - linked)
    assert not unlisted, f"docs/README.md does not list: {', '.join(unlisted)}"
    assert len(pages) >= 10


def test_anchors_follow_github_and_a_wrong_one_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n## What `train_dali` does\n\n```bash\n# not a heading\n```\n## Top\n")
    assert anchors(page) == {"top", "what-train_dali-does", "top-1"}
    readme = tmp_path / "README.md"
    readme.write_text("[a](page.md#top-1) [b](page.md#what-train_dali-does)\n")
    readme.write_text(readme.read_text() + "[c](page.md#not-a-heading) [d](#top)\n")
    assert broken_anchors(tmp_path, [readme]) == ["README.md:2: page.md#not-a-heading", "README.md:2: #top"]


def test_the_scan_reports_a_dangling_reference(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("/docs/build/\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "real.md").write_text("# real\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "See [real](docs/real.md), [gone](docs/gone.md#part), [web](https://example.org/x.md)\n"
        "and `scripts/missing/README.md`, `docs/real.md`, [up](../outside.md), docs/build/x.html\n"
        "and StreamPETR's docs/setup.md, README.md, the tolerances of GUIDE.md §5.\n"
    )
    code = tmp_path / "tool.py"
    code.write_text(
        '"""Reads docs/real.md and docs/also-gone.md."""\n\nDATA = "docs/in-code.md"  # docs/x.md\n'
    )
    missing, seen = dangling(tmp_path, [readme, code])
    assert missing == [
        "README.md:1: docs/gone.md",
        "README.md:2: ../outside.md",
        "README.md:2: scripts/missing/README.md",
        "README.md:3: GUIDE.md",
        "tool.py:3: docs/x.md",
        "tool.py:1: docs/also-gone.md",
    ]
    assert seen == 11
