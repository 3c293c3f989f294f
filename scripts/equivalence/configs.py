"""Which files a sweep runs (the ``*.py`` under the applied checkout's ``projects/configs``, the
overlay's own left out), and which it skips by rule as no training config, with the reason."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from overlaytool import Target, code_root


def upstream_configs(target: Target) -> list[str]:
    """Every ``*.py`` under the applied checkout's ``projects/configs`` that the overlay did not put
    there, relative to the checkout (``src/projects/configs/...`` in a fork that moved it)."""
    checkout = target.checkout
    ours = set(target.overlay_files())
    configs = code_root(target) / "projects" / "configs"
    files = sorted(p.relative_to(checkout).as_posix() for p in configs.rglob("*.py"))
    return [f for f in files if f not in ours]


def _assigned(module: ast.Module) -> dict[str, ast.expr]:
    """Module-level names assigned, with their values."""
    names: dict[str, ast.expr] = {}
    for node in module.body:
        if isinstance(node, ast.Assign):
            names.update({t.id: node.value for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            names[node.target.id] = node.value
    return names


def static_skip_reason(path: Path, _seen: frozenset[Path] = frozenset()) -> str | None:
    """Why ``path`` is no training config, read without running it; None: load it (a file that
    does not parse is loaded too, so that its error becomes a row of its own). A string `_base_`
    that does not exist is a reason, on the config's own line or further down its chain of bases."""
    try:
        names = _assigned(ast.parse(path.read_bytes(), filename=str(path)))
    except (SyntaxError, ValueError):
        return None
    if not {"_base_", "data", "model"} & names.keys():
        return "no `_base_`, `data` or `model`: not a config (a Python file beside them)"
    base = names.get("_base_")
    entries = base.elts if isinstance(base, ast.List | ast.Tuple) else [base] if base is not None else []
    for entry in entries:
        if isinstance(entry, ast.Constant) and isinstance(entry.value, str):
            resolved = (path.parent / entry.value).resolve()
            if not resolved.is_file():
                return f"its `_base_` {entry.value!r} does not exist ({resolved})"
            deeper = (
                static_skip_reason(resolved, _seen | {path})
                if resolved.suffix == ".py" and resolved not in _seen
                else None
            )
            if deeper is not None and deeper.startswith("its `_base_`"):
                return f"its `_base_` {entry.value!r} is no config: {deeper}"
    return None


def loaded_skip_reason(cfg: Any, split: str = "train") -> str | None:
    """Why a loaded config is no config of ``split``: no ``model``, or no ``data.<split>``."""
    missing = [key for key in ("model", "data") if key not in cfg]
    if not missing and split not in cfg["data"]:
        missing.append(f"data.{split}")
    if missing:
        names = " or ".join(f"`{m}`" for m in missing)
        return f"no {names} once loaded: a base or fragment, not a {split} config"
    return None
