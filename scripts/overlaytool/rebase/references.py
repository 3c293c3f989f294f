"""The overlay's references into upstream, checked statically (`ast`) against a rebased tree: a config's
`_base_`, an import of an overlay module, a quoted path a patch adds that names an overlay file
(docs/rebase.md). A `_base_` built at run time cannot be checked: it is listed apart, never resolved.
"""

from __future__ import annotations

import ast
import copy
import posixpath
import re
from pathlib import Path

from ..cache import mirror_path
from ..gitcmd import git, has_commit, tree_files
from ..overlay import overlay_files, place
from ..targets import Target, load_targets
from ..tree.code_root import code_root_in

OVERLAY_REFERENCE = "overlay-reference"
QUOTED = re.compile(r"""["']([\w./-]+\.\w+)["']""")


def unresolved_references(
    target: Target, checkout: Path, tree: set[str], base: str, renames: dict[str, str]
) -> list[dict]:
    """Every reference of the overlay (and of the patches into the overlay) that does not resolve
    in the `tree` at the checkout's HEAD (`tree_files`), whose upstream commit is `base`."""
    raw = overlay_files(target.overlay_dir)
    placed = {place(rel, target.overlay_moves): rel for rel in raw}
    exists = tree | set(placed)
    found = [*_bases(raw, placed, exists, renames, nested_trees(target))]
    changed = git("diff", "--name-only", "-z", base, "HEAD", cwd=checkout).stdout.split("\0")
    patched = sorted(p for p in changed if p.endswith(".py") and p in tree)
    code = code_root_in(tree, target.overlay_moves)
    found += _imports(checkout, patched, raw, target, exists, renames, code)
    found += _patch_paths(checkout, base, raw, target, exists)
    return found


def unchecked_references(target: Target, checkout: Path, tree: set[str]) -> list[dict]:
    """What the overlay's configs build on that the static check cannot vouch for: `_base_` entries built
    at run time (in the overlay's configs and the target's own configs their chains reach), and a string
    `_base_` of such an own config naming no file."""
    raw = overlay_files(target.overlay_dir)
    nested = nested_trees(target)
    out, seen = [], set()
    for rel, path in sorted(raw.items()):
        module = _parsed(path)
        if module is None:
            continue
        dest = place(rel, target.overlay_moves)
        names, built = _base_entries(module)
        out += [_unchecked(f"overlay/{rel}", dest, name, nested) for name in built]
        todo = [posixpath.normpath(posixpath.join(posixpath.dirname(dest), n)) for n in names]
        while todo:  # the tree's configs the overlay config builds on, base by base
            base = todo.pop()
            if base in seen or base not in tree or not base.endswith(".py"):
                continue
            seen.add(base)
            tree_module = _parse(git("show", f"HEAD:{base}", cwd=checkout, text=False).stdout, base)
            if tree_module is None:
                continue
            names, built = _base_entries(tree_module)
            via = f" (a base of overlay/{rel})"
            out += [_unchecked(base, base, name, nested, via) for name in built]
            for name in names:
                expected = posixpath.normpath(posixpath.join(posixpath.dirname(base), name))
                if not _in_tree_or_nested(expected, tree, nested):
                    note = f"the target's own config{via}: no such file, the config fails to load"
                    out.append(_ref(base, "_base_", name, expected, None, note))
                todo.append(expected)
    return out


def _in_tree_or_nested(path: str, tree: set[str], nested: dict[str, tuple[str, set[str] | None]]) -> bool:
    """Whether `path` (relative to the checkout) is a file of the tree, or of a nested checkout's
    pinned tree (taken as there when the cache lacks that pin: `unresolved_references` says so)."""
    for folder, (_, files) in nested.items():
        if path.startswith(folder + "/"):
            return files is None or path[len(folder) + 1 :] in files
    return path in tree


UNCHECKED = (  # the title of what `unchecked_references` lists
    "overlay configs' bases the check cannot vouch for "
    "(built at run time, or missing from the target's own configs)"
)
RUN_TIME = "built at run time: not checked (mmcv resolves it when the config loads)"
FROM_FILE = re.compile(r"\b([A-Za-z_]\w*)\.__file__\b")


def _unchecked(
    file: str,
    dest: str,
    built: tuple[str, str],
    nested: dict[str, tuple[str, set[str] | None]],
    via: str = "",
) -> dict:
    """The reference of a `_base_` entry built at run time (its text, and the text with the names it
    uses replaced by their values), in the config `file` that lands at `dest`."""
    entry, expanded = built
    package = FROM_FILE.search(expanded)
    if package is None:
        return _ref(file, "_base_", entry, None, None, RUN_TIME + via)
    name = package.group(1)
    through = "" if package.group(0) in entry else f" (through {', '.join(_names_between(entry, expanded))})"
    note = (
        f"built from {name}.__file__{through}{via}: at run time a path into the installed {name} "
        f"(site-packages), and a wheel-installed {name} has no configs/ there: the config fails to load "
        "(FileNotFoundError)"
    )
    fix = _nested_path(dest, expanded, name, nested)
    note += (
        f"; base it on the nested checkout's copy instead: {fix!r} (a path relative to the config)"
        if fix
        else "; base it on a file of the checkout with a path relative to the config"
    )
    return _ref(file, "_base_", entry, None, fix, note)


def _names_between(entry: str, expanded: str) -> list[str]:
    """The module-level names `entry` uses that its expanded text replaced."""
    used = {n.id for n in ast.walk(ast.parse(entry, mode="eval")) if isinstance(n, ast.Name)}
    kept = {n.id for n in ast.walk(ast.parse(expanded, mode="eval")) if isinstance(n, ast.Name)}
    return sorted(used - kept) or ["a module-level name"]


def _nested_path(
    dest: str, entry: str, package: str, nested: dict[str, tuple[str, set[str] | None]]
) -> str | None:
    """The `_base_` string reaching, in the nested checkout holding `<package>/`, the file an entry built
    from `<package>.__file__` names (relative to the config at `dest`); None for another shape."""
    try:
        where = _path_in_repository(ast.parse(entry, mode="eval").body, package)
    except SyntaxError:
        return None
    if where is None:
        return None
    wanted = posixpath.normpath(where)  # in the package's repository
    for folder, (_, files) in nested.items():
        if files and f"{package}/__init__.py" in files and wanted in files:
            return posixpath.relpath(f"{folder}/{wanted}", posixpath.dirname(dest) or ".")
    return None


def _path_in_repository(node: ast.expr, package: str) -> str | None:
    """The path `node` builds, relative to the repository holding `<package>/`: `package.__file__`
    is `<package>/__init__.py`; `dirname`, `join`, `abspath`/`realpath` and strings are followed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Attribute) and node.attr == "__file__" and ast.unparse(node.value) == package:
        return f"{package}/__init__.py"
    if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
        return None
    name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
    parts = [_path_in_repository(a, package) for a in node.args]
    if any(p is None for p in parts) or not parts or node.keywords:
        return None
    if name == "dirname" and len(parts) == 1:
        return posixpath.dirname(parts[0] or "")
    if name in ("abspath", "realpath", "normpath") and len(parts) == 1:
        return parts[0]
    if name == "join":
        return posixpath.join(*[p or "" for p in parts])
    return None


def nested_trees(target: Target) -> dict[str, tuple[str, set[str] | None]]:
    """The other targets checked out inside this one's checkout: folder (relative to the checkout)
    → (their label, the files of their pinned tree and overlay; None when the cache lacks the pin)."""
    if target.root is None:
        return {}
    targets = load_targets(target.root)
    real = next((t for t in targets if t.name == target.name), target)  # this target in the project
    out: dict[str, tuple[str, set[str] | None]] = {}
    for other in targets:
        if other.name == target.name or not other.checkout.is_relative_to(real.checkout):
            continue
        mirror, files = mirror_path(other.pin), None
        if mirror.is_dir() and has_commit(mirror, other.pin.commit):
            files = tree_files(mirror, other.pin.commit)
            files |= {place(rel, other.overlay_moves) for rel in overlay_files(other.overlay_dir)}
        out[other.checkout.relative_to(real.checkout).as_posix()] = (other.label, files)
    return out


def _parsed(path: Path) -> ast.Module | None:
    return _parse(path.read_bytes(), str(path)) if path.suffix == ".py" else None


def _bases(
    raw: dict[str, Path],
    placed: dict[str, str],
    exists: set[str],
    renames: dict[str, str],
    nested: dict[str, tuple[str, set[str] | None]],
) -> list[dict]:
    out = []
    for dest, rel in sorted(placed.items()):
        if not dest.endswith(".py"):
            continue
        try:
            module = ast.parse(raw[rel].read_bytes(), filename=str(raw[rel]))
        except (SyntaxError, ValueError) as exc:
            out.append(_ref(f"overlay/{rel}", "syntax", "", None, None, f"does not parse: {exc}"))
            continue
        names, _ = _base_entries(module)
        for name in names:
            expected = posixpath.normpath(posixpath.join(posixpath.dirname(dest), name))
            inside = next(((f, t) for f, t in nested.items() if expected.startswith(f + "/")), None)
            if inside is not None:
                folder, (label, files) = inside
                if files is None:
                    note = f"the cache lacks {label}'s pin to look in (`nox -s fetch`)"
                    out.append(_ref(f"overlay/{rel}", "_base_", name, expected, None, note))
                elif expected[len(folder) + 1 :] not in files:
                    note = f"not a file of {label}'s pinned tree (the checkout at {folder}/)"
                    out.append(_ref(f"overlay/{rel}", "_base_", name, expected, None, note))
            elif expected.startswith("../"):
                out.append(_ref(f"overlay/{rel}", "_base_", name, expected, None, "outside the checkout"))
            elif expected not in exists:
                candidate = renames.get(expected)
                out.append(_ref(f"overlay/{rel}", "_base_", name, expected, candidate))
    return out


def _base_entries(module: ast.Module) -> tuple[list[str], list[tuple[str, str]]]:
    """The strings of a module-level `_base_ = "..."` or `_base_ = [...]`, and the entries built at
    run time (any other expression): their source text, and that text with the value of each
    module-level name it uses in place of the name (`_mmdet = osp.dirname(osp.dirname(mmdet3d.__file__))`)."""
    names, built, values = [], [], {}
    for node in module.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id != "_base_":
                values[target.id] = node.value
        if any(isinstance(t, ast.Name) and t.id == "_base_" for t in node.targets):
            elements = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            for v in elements:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    names.append(v.value)
                else:
                    built.append((ast.unparse(v), ast.unparse(_ValuesOf(values).visit(copy.deepcopy(v)))))
    return names, built


class _ValuesOf(ast.NodeTransformer):
    """Puts the value of a module-level name in place of the name (once: no recursion)."""

    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return copy.deepcopy(self.values.get(node.id, node))


def _imports(
    checkout: Path,
    patched: list[str],
    raw: dict[str, Path],
    target: Target,
    exists: set[str],
    renames: dict[str, str],
    code: str,
) -> list[dict]:
    """Imports of an overlay module (in the patched files, the overlay's Python files and its configs'
    `custom_imports`) that the runners would not find: beside the importing file, or at the code root."""
    was = {new: old for old, new in renames.items()}
    sources: list[tuple[str, str, str, set[str]]] = []  # (file, its folder, folder at the old pin, names)
    for rel in patched:
        data = git("show", f"HEAD:{rel}", cwd=checkout, text=False).stdout
        module = _parse(data, rel)
        if module is not None:  # upstream's own file that does not parse: the finish's checks fail it
            folder = posixpath.dirname(rel)
            sources.append((rel, folder, posixpath.dirname(was.get(rel, rel)), _imported(module)))
    for rel, path in sorted(raw.items()):
        module = _parsed(path)
        if module is not None:
            folder = posixpath.dirname(place(rel, target.overlay_moves))
            names = _imported(module) | _custom_imports(module)
            sources.append((f"overlay/{rel}", folder, posixpath.dirname(rel), names - {rel.split("/")[0]}))
    out = []
    for file, folder, old_folder, names in sources:
        for name in sorted(names):
            out += _unresolved_import(file, name, folder, old_folder, raw, target, exists, code)
    return out


def _unresolved_import(
    file: str,
    name: str,
    folder: str,
    old_folder: str,
    raw: dict[str, Path],
    target: Target,
    exists: set[str],
    code: str,
) -> list[dict]:
    """The reference of `file`'s import of `name` when the overlay provides `name` and it would not
    be found where the runners look (see `_imports`); empty otherwise."""
    module_files = (posixpath.join(old_folder, f"{name}.py"), posixpath.join(old_folder, name, "__init__.py"))
    beside_ours = [p for p in module_files if p in raw]
    top_ours = [p for p in (f"{name}.py", f"{name}/__init__.py") if p in raw]
    at_code = [posixpath.join(code, f"{name}.py"), posixpath.join(code, name, "__init__.py")]
    if beside_ours:
        beside = [posixpath.join(folder, f"{name}.py"), posixpath.join(folder, name, "__init__.py")]
        if any(p in exists for p in [*beside, *at_code]):
            return []
        lands = place(beside_ours[0], target.overlay_moves)
        wanted = beside[module_files.index(beside_ours[0])]  # a module's file, or a package's __init__
        return [_ref(file, "import", name, wanted, lands, f"the overlay puts it at {lands}")]
    if not top_ours or any(p in exists for p in at_code):
        return []  # not the overlay's (stdlib, upstream's, third-party), or where the runners look
    lands = place(top_ours[0], target.overlay_moves)
    where = f"{code}/" if code else "the checkout's root"
    note = (
        f"the runners put {where} (the folder holding projects/) on the path; the overlay puts it at {lands}"
    )
    return [_ref(file, "import", name, posixpath.join(code, top_ours[0]), lands, note)]


def _parse(data: bytes, name: str) -> ast.Module | None:
    try:
        return ast.parse(data, filename=name)
    except (SyntaxError, ValueError):
        return None


def _imported(module: ast.Module) -> set[str]:
    """The top-level names of every absolute import in the module (inside functions too)."""
    imported = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    return imported


def _custom_imports(module: ast.Module) -> set[str]:
    """The top-level names of a config's `custom_imports = dict(imports=[...])` (mmcv imports them
    when the config loads)."""
    names = set()
    for node in module.body:
        if not (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "custom_imports" for t in node.targets)
            and isinstance(node.value, ast.Call)
        ):
            continue
        for kw in node.value.keywords:
            if kw.arg == "imports" and isinstance(kw.value, (ast.List, ast.Tuple)):
                names |= {
                    e.value.split(".")[0]
                    for e in kw.value.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }
    return names


def _patch_paths(
    checkout: Path, base: str, raw: dict[str, Path], target: Target, exists: set[str]
) -> list[dict]:
    """Quoted paths on the lines the replayed series adds that name an overlay file."""
    diff = git("diff", "--no-color", "--no-renames", base, "HEAD", cwd=checkout).stdout
    out, current = [], ""
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else ""
        elif line.startswith("+") and current:
            for name in QUOTED.findall(line):
                if name in raw and name not in exists:
                    lands = place(name, target.overlay_moves)
                    out.append(
                        _ref(current, "patch-path", name, name, lands, f"the overlay puts it at {lands}")
                    )
    return out


def _ref(
    file: str, kind: str, names: str, expected: str | None, candidate: str | None, note: str = ""
) -> dict:
    return dict(file=file, kind=kind, names=names, expected=expected, candidate=candidate, note=note)


def reference_lines(references: list[dict]) -> list[str]:
    """One line per unresolved (or unchecked) reference."""
    lines = []
    for r in references:
        if r["kind"] == "syntax":
            lines.append(f"  {r['file']}: {r['note']}")
            continue
        if r["expected"] is None:  # unchecked: built at run time
            lines.append(f"  {r['file']}: {r['kind']} {r['names']} {r['note']}")
            continue
        if r["kind"] != "_base_" or r["note"]:
            why = r["note"]
        elif r["candidate"]:
            why = f"git's candidate at the target: {r['candidate']}"
        else:
            why = "git finds no candidate (upstream deleted it)"
        lines.append(f"  {r['file']}: {r['kind']} {r['names']!r} → {r['expected']} does not exist; {why}")
    return lines


def suggested_moves(references: list[dict]) -> list[str]:
    """`overlay_moves` entries for references that a whole moved folder explains (`tools` → `src/tools`)."""
    moves = set()
    for r in references:
        expected, candidate = r["expected"], r["candidate"]
        if not expected or not candidate:
            continue
        # _base_: upstream's file moved from `expected` to `prefix/expected`: move the config's folder alike;
        # import: the module is wanted at `prefix/<where the overlay puts it>`
        moved, stays, overlay_rel = (
            (candidate, expected, r["file"].removeprefix("overlay/"))
            if r["kind"] == "_base_"
            else (expected, candidate, candidate)
        )
        if moved.endswith("/" + stays):
            prefix, top = moved[: -len(stays) - 1], overlay_rel.split("/")[0]
            if "/" in overlay_rel:
                moves.add(f'{top} = "{prefix}/{top}"')
    return sorted(moves)


def reference_summary(references: list[dict]) -> list[str]:
    """The unresolved references, a line each, then the `overlay_moves` that resolve them, if any
    (what forkwatch's vet says of a rebase report's `overlay_references`)."""
    moves = suggested_moves(references)
    lines = [line.strip() for line in reference_lines(references)]
    return lines + ([f"suggested `overlay_moves` (patches/config.toml): {', '.join(moves)}"] if moves else [])
