"""Helpers that build throw-away upstream repositories and project roots for the overlaytool tests
(and the forkwatch, equivalence and runner tests that use its small project)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from overlaytool.__main__ import main
from overlaytool.gitcmd import TOOL_IDENTITY

TRAIN_PY = "".join(f"line {i}\n" for i in range(1, 41))
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def patched(text: str, line: int, new: str) -> str:
    """`text` with line `line` (1-based) replaced by `new`."""
    lines = text.splitlines(keepends=True)
    lines[line - 1] = new + "\n"
    return "".join(lines)


def git(cwd: Path, *args: str) -> str:
    env = {**TOOL_IDENTITY, "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(cwd)}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def retitle(checkout: Path, subject: str, *options: str) -> None:
    """Amend HEAD with a new subject line, its body (DEP-3 fields, trailers) kept as it is."""
    body = git(checkout, "log", "-1", "--format=%b")
    git(checkout, "commit", "-q", "--amend", *options, "-m", subject, "-m", body)


def write_files(
    repo: Path, files: dict[str, str | None], executable=(), links: dict[str, str] | None = None
) -> None:
    """Write text files (None deletes), mark `executable` ones +x, make `links` symlinks (path -> target)."""
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            path.unlink()
        else:
            path.write_text(text)
    for rel in executable:
        (repo / rel).chmod(0o755)
    for rel, target in (links or {}).items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        if (repo / rel).is_symlink() or (repo / rel).exists():
            (repo / rel).unlink()
        os.symlink(target, repo / rel)


def commit_files(
    repo: Path, files: dict[str, str], message: str, executable=(), links: dict[str, str] | None = None
) -> str:
    write_files(repo, files, executable, links)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def make_patch(
    tmp: Path,
    base: dict[str, str],
    new: dict[str, str | None],
    subject: str,
    header: bool = True,
    executable=(),
    links: dict[str, str] | None = None,
    base_executable=(),
    base_links: dict[str, str] | None = None,
) -> str:
    """A format-patch style patch turning files `base` into `new` (made by real git); `executable`
    and `links` set modes and symlinks on the new side, `base_*` on the old side."""
    repo = Path(tempfile.mkdtemp(prefix="mk-", dir=tmp))
    git(repo, "init", "-q")
    commit_files(repo, base or {".keep": ""}, "base", base_executable, base_links)
    body = "\n\nDescription: test change\nForwarded: not-needed\n" if header else ""
    write_files(repo, new, executable, links)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject + body)
    args = ["format-patch", "--zero-commit", "--no-signature", "--no-stat", "--no-numbered", "--full-index"]
    return git(repo, *args, "--stdout", "-1", "HEAD")


def with_filename(text: str, name: str) -> str:
    """`text` (a make_patch patch with a DEP-3 body) as refresh exports it: its header ends in the
    `Patch-Filename:` trailer, the way git writes a commit message carrying it."""
    if "\nForwarded:" not in text.split("\ndiff --git", 1)[0] or "\nPatch-Filename:" in text:
        return text
    return text.replace("\n\ndiff --git", f"\nPatch-Filename: {name}\n\ndiff --git", 1)


@dataclass
class Project:
    root: Path
    upstream: Path
    mmdet3d: Path
    pin: str
    history: list[str]

    def run(self, *args: str) -> int:
        return main(["--root", str(self.root), *args])

    @property
    def cache(self) -> Path:
        return self.root.parent / "cache"

    def spawn(self, *args: str, **env: str) -> subprocess.Popen:
        """The tool as a separate process (for kills and concurrency); `env` adds variables."""
        full = {**os.environ, "PYTHONPATH": str(SCRIPTS), "STREAMPETR_DALI_CACHE": str(self.cache), **env}
        cmd = [sys.executable, "-m", "overlaytool", "--root", str(self.root), *args]
        return subprocess.Popen(cmd, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def call(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        """Run the tool in a separate process to the end; returncode -9 means it was SIGKILLed."""
        proc = self.spawn(*args, **env)
        out, err = proc.communicate(timeout=120)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    @property
    def patch_dir(self) -> Path:
        """The StreamPETR target's series folder."""
        return self.root / "patches" / "streampetr"

    @property
    def checkout(self) -> Path:
        return self.root / "upstream" / "StreamPETR"

    def add_patch(self, name: str, text: str, trailer: bool = True) -> None:
        """Add `text` as patch `name` at the end of the series (with its `Patch-Filename:` trailer)."""
        (self.patch_dir / name).write_text(with_filename(text, name) if trailer else text)
        with (self.patch_dir / "series").open("a") as f:
            f.write(name + "\n")


CONFIG = """\
[[target]]
name = "streampetr"
pin = "upstream/streampetr.toml"
patches = "patches/streampetr"
overlay = "overlay"

[[target]]
name = "mmdetection3d"
pin = "upstream/mmdetection3d.toml"
patches = "patches/mmdetection3d"
"""


def write_config(root: Path) -> None:
    """The project's two targets (as in the repository), each with an empty series."""
    for folder in ("streampetr", "mmdetection3d"):
        (root / "patches" / folder).mkdir(parents=True)
        (root / "patches" / folder / "series").write_text("# test series\n")
    (root / "patches" / "config.toml").write_text(CONFIG)


def write_pin(path: Path, name: str, url: str, commit: str, checkout: str) -> None:
    path.write_text(
        f'name = "{name}"\nurl = "{url}"\ncommit = "{commit}"\ndate = "2024-06-26"\ncheckout = "{checkout}"\n'
    )


def tree_state(checkout: Path) -> dict[str, tuple[str, bytes]]:
    """Every file of a checkout outside `.git` (nested checkouts included) as git sees it: mode and bytes."""
    state = {}
    for path in sorted(checkout.rglob("*")):
        rel = path.relative_to(checkout)
        if ".git" in rel.parts:
            continue
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            state[rel.as_posix()] = ("120000", os.readlink(path).encode())
        elif stat.S_ISREG(st.st_mode):
            state[rel.as_posix()] = ("100755" if st.st_mode & 0o100 else "100644", path.read_bytes())
    return state


def mode_of(path: Path) -> str:
    """git's mode of a work-tree path."""
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        return "120000"
    return "100755" if st.st_mode & 0o100 else "100644"


def build_project(tmp_path: Path) -> Project:
    """The `project` fixture's project under `tmp_path` (its cache: `tmp_path / "cache"`)."""
    upstream = tmp_path / "remote" / "exiawsh" / "StreamPETR"
    upstream.mkdir(parents=True)
    git(upstream, "init", "-q", "-b", "main")
    history = [commit_files(upstream, {"tools/train.py": TRAIN_PY, "README.md": "upstream\n"}, "released")]
    mmdet3d = tmp_path / "remote" / "open-mmlab" / "mmdetection3d"
    mmdet3d.mkdir(parents=True)
    git(mmdet3d, "init", "-q", "-b", "main")
    mm_commit = commit_files(mmdet3d, {"mmdet3d/__init__.py": "x = 1\n"}, "rc6")
    root = tmp_path / "proj"
    (root / "upstream").mkdir(parents=True)
    (root / "overlay").mkdir()
    write_config(root)
    write_pin(
        root / "upstream" / "streampetr.toml",
        "StreamPETR",
        upstream.as_uri(),
        history[0],
        "upstream/StreamPETR",
    )
    write_pin(
        root / "upstream" / "mmdetection3d.toml", "mmdetection3d", mmdet3d.as_uri(), mm_commit,
        "upstream/StreamPETR/mmdetection3d",
    )  # fmt: skip
    return Project(root, upstream, mmdet3d, history[0], history)


def pin_layout(project: Project, files: dict[str, str], moves: str = "") -> Project:
    """Pin a commit of upstream holding `files` (with `moves`, TOML lines, as the StreamPETR target's
    keys: `overlay_moves`), with an overlay config; not applied."""
    project.pin = commit_files(project.upstream, files, "layout")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    (project.root / "overlay" / "projects" / "configs" / "dali").mkdir(parents=True)
    (project.root / "overlay" / "projects" / "configs" / "dali" / "r50_dali.py").write_text("x = 1\n")
    if moves:
        config = project.root / "patches" / "config.toml"
        config.write_text(
            config.read_text().replace('overlay = "overlay"\n', f'overlay = "overlay"\n{moves}', 1)
        )
    return project
