"""Which `mmcv._ext` functions a config can reach: `python -m upstream_env.op_reach [CONFIG ...]`,
run with the OpenMMLab env's python in the repository root (the applied checkout must exist).

The method (build the config's objects on the CPU, then follow statically what runs from them down
to attribute reads of `mmcv._ext`) is docs/upstream-env.md#the-cuda-op-set. Imports only the stdlib
at module level; mmcv and mmdet3d are imported inside the env when run.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import inspect
import json
import sys
import textwrap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from overlaytool import REPO_ROOT

PACKAGES = ("mmcv", "mmdet", "mmdet3d", "mmseg", "projects")
EXT_MODULE = "mmcv._ext"

# What tools/train.py and tools/test.py call beside the config's objects (a module: its functions).
ENTRY_POINTS = (
    "mmdet3d.utils.collect_env",
    "mmcv.runner.wrap_fp16_model",
    "mmcv.cnn.fuse_conv_bn",
    "mmdet3d.apis.single_gpu_test",
    "projects.mmdet3d_plugin.core.apis.train",
    "projects.mmdet3d_plugin.core.apis.mmdet_train",
    "projects.mmdet3d_plugin.core.apis.test",
    "projects.mmdet3d_plugin.datasets.builder",
)
MODEL_METHODS = ("train_step", "val_step", "forward", "init_weights")
DATASET_METHODS = ("__init__", "__getitem__", "__len__", "evaluate", "format_results")
NOT_CONFIGS = ("parts", "slurm")  # config fragments under projects/configs


def _ours(obj: object) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.split(".", 1)[0] in PACKAGES


def supported_configs(checkout: Path) -> list[Path]:
    """Every config under `projects/configs/` of the checkout's code root (upstream's and the overlay's)."""
    root = checkout / "projects" / "configs"
    return sorted(p for p in root.rglob("*.py") if not set(p.relative_to(root).parts[:-1]) & set(NOT_CONFIGS))


@dataclass
class Reach:
    """The fixed point of what the roots reach; `ext` maps each `mmcv._ext` name to one path to it."""

    ext: dict[str, str] = field(default_factory=dict)
    classes: dict[type, object] = field(default_factory=dict)  # known class -> a built instance or itself
    names: dict[str, str] = field(default_factory=dict)  # attributes used on unknown objects -> path
    _todo: list[tuple[object, object, str]] = field(default_factory=list)
    _seen: set[tuple[int, int]] = field(default_factory=set)
    _keep: list[object] = field(default_factory=list)  # seen objects stay alive: their ids stay unique

    def run(self) -> dict[str, str]:
        while self._todo:
            func, owner, via = self._todo.pop()
            self._visit(func, owner, via)
        return self.ext

    def follow(self, func: object, owner: object, via: str) -> None:
        func = _function(func)
        if func is None or not _ours(func) or (id(func), id(owner)) in self._seen:
            return
        self._seen.add((id(func), id(owner)))
        self._keep.append((func, owner))
        self._todo.append((func, owner, via))

    def know(self, cls: type, owner: object, via: str, entries: Iterable[str] = ("__init__",)) -> None:
        """A class built (`owner` an instance) or constructed by code (`owner` the class)."""
        if not _ours(cls):
            return
        if cls not in self.classes or (self.classes[cls] is cls and owner is not cls):
            self.classes[cls] = owner
        if _is_autograd_function(cls):
            entries = (*entries, "forward", "backward")
        for name in (*entries, *[n for n in self.names if _has(cls, n)]):
            self.follow(_lookup(cls, name), owner, f"{via} -> {cls.__name__}.{name}")

    def use_name(self, name: str, via: str) -> None:
        """`x.name` on an object of unknown type: every known class's `name`."""
        if name in self.names:
            return
        self.names[name] = via
        for cls, owner in list(self.classes.items()):
            if _has(cls, name):
                self.follow(_lookup(cls, name), owner, f"{via} -> {cls.__name__}.{name}")

    def built(self, root: object, via: str) -> None:
        """Every object of a graph built from a config: modules run `forward`, transforms `__call__`."""
        import torch

        stack, seen = [(root, via)], set()
        while stack:
            obj, path = stack.pop()
            if id(obj) in seen or inspect.isclass(obj) or inspect.isroutine(obj):
                continue
            seen.add(id(obj))
            if isinstance(obj, dict):
                stack.extend((v, path) for v in obj.values())
            elif isinstance(obj, list | tuple | set):
                stack.extend((v, path) for v in obj)
            elif _ours(type(obj)) or isinstance(obj, torch.nn.Module):
                entry = "forward" if isinstance(obj, torch.nn.Module) else "__call__"
                self.know(type(obj), obj, f"{path}: {type(obj).__name__}", (entry,))
                stack.extend((v, f"{path}.{k}") for k, v in getattr(obj, "__dict__", {}).items())

    def _visit(self, func: object, owner: object, via: str) -> None:
        where = f"{via} ({func.__module__}.{func.__qualname__})"
        for kind, obj, attr in _uses(func, owner):
            if kind == "ext":
                self.ext.setdefault(attr, where)
            elif kind == "name":
                self.use_name(attr, where)
            elif kind == "method":
                self.follow(obj, attr, where)  # attr: the object the method was found on
            elif inspect.isclass(obj):
                self.know(obj, obj, where)
            elif callable(obj) and not inspect.isroutine(obj) and _ours(type(obj)):
                self.built(obj, where)  # a built object reached through `self`
            else:
                self.follow(obj, None, where)


def _is_autograd_function(cls: type) -> bool:
    return any(k.__name__ == "Function" and k.__module__.startswith("torch.autograd") for k in cls.__mro__)


def _has(cls: type, name: str) -> bool:
    return any(name in vars(k) for k in cls.__mro__ if _ours(k))


def _lookup(cls: type, name: str) -> object:
    for klass in cls.__mro__:
        if name in vars(klass):
            value = vars(klass)[name]
            return value.fget if isinstance(value, property) else value
    return None


def _function(obj: object) -> object:
    """The plain function behind a method, static/class method, property or decorator; else None."""
    if isinstance(obj, staticmethod | classmethod):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    obj = getattr(obj, "__func__", obj)
    if not inspect.isfunction(obj):
        return None
    return inspect.unwrap(obj)


def _chain(node: ast.AST) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None when the base is not a plain name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _outermost_chains(tree: ast.AST) -> set[tuple[str, ...]]:
    """Every maximal name chain (`a.b.c`, not also `a.b`) in a syntax tree."""
    inner: set[int] = set()
    chains = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            child = node.value
            while isinstance(child, ast.Attribute):
                inner.add(id(child))
                child = child.value
            if (c := _chain(node)) is not None:
                chains.add(tuple(c))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            chains.add((node.id,))
    return {c for c in chains if not any(len(o) > len(c) and o[: len(c)] == c for o in chains)}


def _uses(func: object, owner: object) -> Iterator[tuple[str, object, object]]:
    """What a function's source uses: ("ext", module, name), ("name", None, attribute on an unknown
    object), ("method", function, its owner) or ("object", resolved object, None)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return
    scope = dict(func.__globals__)
    if func.__closure__:
        for name, cell in zip(func.__code__.co_freevars, func.__closure__, strict=True):
            with contextlib.suppress(ValueError):  # an empty cell
                scope[name] = cell.cell_contents
    imported = _local_imports(tree, func.__module__)
    scope.update(imported)
    args = func.__code__.co_varnames[: func.__code__.co_argcount]
    self_name = args[0] if args and owner is not None else None
    for chain in sorted(_outermost_chains(tree)):
        base, rest = chain[0], chain[1:]
        if base == self_name:
            obj = owner
        elif base in imported or (base in scope and base not in func.__code__.co_varnames):
            obj = scope[base]
        else:
            yield from (("name", None, attr) for attr in rest)
            continue
        holder = None
        for i, attr in enumerate(rest):
            if inspect.ismodule(obj) and obj.__name__ == EXT_MODULE:
                yield "ext", obj, attr
                break
            try:
                value = inspect.getattr_static(obj, attr)
            except AttributeError:
                if not (inspect.ismodule(obj) or (base == self_name and i == 0)):
                    yield from (("name", None, a) for a in rest[i:])
                break  # an attribute a built object lacks (a branch the config does not take)
            holder, obj = obj, value
        else:
            if inspect.isclass(holder) and _is_autograd_function(holder) and rest[-1] == "apply":
                yield "object", holder, None  # `Function.apply(...)`: the autograd Function
            elif isinstance(obj, property | staticmethod | classmethod) or inspect.isfunction(obj):
                yield ("method", obj, holder if holder is not None and not inspect.ismodule(holder) else None)
            elif inspect.isbuiltin(obj) and inspect.isclass(getattr(obj, "__self__", None)):
                yield "object", obj.__self__, None  # `Function.apply`: the autograd Function
            elif not (inspect.ismodule(obj) and obj.__name__ == EXT_MODULE):
                yield "object", obj, None


def _local_imports(tree: ast.AST, module: str) -> dict[str, object]:
    """The names bound by `import` statements inside a function (mmcv's collect_env imports its ops
    there), resolved by importing them; relative imports against the function's module."""
    package = module.rpartition(".")[0]
    names: dict[str, object] = {}
    for node in ast.walk(tree):
        try:
            if isinstance(node, ast.ImportFrom):
                source = importlib.import_module("." * node.level + (node.module or ""), package or None)
                names.update(
                    {
                        a.asname or a.name: getattr(source, a.name)
                        for a in node.names
                        if hasattr(source, a.name)
                    }
                )
            elif isinstance(node, ast.Import):
                for a in node.names:  # `import a.b` binds a; `import a.b as c` binds a.b
                    bound = a.name if a.asname else a.name.split(".")[0]
                    names[a.asname or bound] = importlib.import_module(bound)
        except ImportError:  # an optional dependency absent here: nothing of ours to follow
            continue
    return names


def _entry_functions(dotted: str) -> list[object]:
    try:
        entry = importlib.import_module(dotted)
    except ImportError:
        module, _, name = dotted.rpartition(".")
        return [getattr(importlib.import_module(module), name)]
    return [v for v in vars(entry).values() if inspect.isfunction(v) and v.__module__ == entry.__name__]


def reach_config(config: Path) -> dict[str, str]:
    """`mmcv._ext` name -> one path that reaches it, for one config (built on the CPU)."""
    from mmcv import Config
    from mmdet3d.datasets import DATASETS
    from mmdet3d.datasets.pipelines import Compose
    from mmdet3d.models import build_model

    cfg = Config.fromfile(str(config))
    for part in ("img_backbone", "pts_backbone"):
        if isinstance(cfg.model.get(part), dict) and cfg.model[part].get("init_cfg"):
            cfg.model[part].init_cfg = None  # nothing is downloaded: the weights do not matter here
    reach = Reach()
    model = build_model(cfg.model, train_cfg=cfg.get("train_cfg"), test_cfg=cfg.get("test_cfg"))
    reach.built(model, "model")
    reach.know(type(model), model, "model", MODEL_METHODS)
    for split in ("train", "val", "test"):
        data = cfg.data.get(split)
        if data is None:
            continue
        data = data.get("dataset", data)  # a wrapper (e.g. CBGSDataset) holds the real one
        reach.know(DATASETS.get(data.type), DATASETS.get(data.type), f"data.{split}", DATASET_METHODS)
        reach.built(Compose(data.pipeline), f"data.{split}.pipeline")
    for hook in _hook_classes(cfg):
        callbacks = [n for n in dir(hook) if n.startswith(("before_", "after_"))]
        reach.know(hook, hook, f"hooks: {hook.__name__}", callbacks)
    for name in ENTRY_POINTS:
        for function in _entry_functions(name):
            reach.follow(function, None, name)
    return reach.run()


def _hook_classes(cfg: object) -> list[type]:
    """The runner hooks the config names (optimizer hook, custom hooks, logger hooks); the runner
    calls their `before_*`/`after_*` methods."""
    from mmcv.runner import HOOKS

    optimizer = dict(cfg.get("optimizer_config") or {})
    hooks = [{"type": optimizer.get("type", "OptimizerHook")}, *cfg.get("custom_hooks", [])]
    hooks += (cfg.get("log_config") or {}).get("hooks", [])
    return [HOOKS.get(h["type"]) for h in hooks if isinstance(h, dict) and HOOKS.get(h.get("type", ""))]


def _code_root(given: Path | None) -> Path:
    """``--checkout`` as given, else the applied StreamPETR checkout's code root (its root, or where a
    fork moved its sources: `overlay_moves`)."""
    from overlaytool import require_code_root

    root = given or require_code_root("upstream_env.op_reach", REPO_ROOT)
    if not (root / "projects" / "mmdet3d_plugin").is_dir():
        raise SystemExit(f"{root} holds no projects/mmdet3d_plugin: not an applied StreamPETR checkout")
    return root


def _load_checkout(checkout: Path) -> None:
    sys.path.append(str(checkout))
    import projects.mmdet3d_plugin  # noqa: F401  (registers the plugin's modules)


def outside_the_set(reached: dict[str, str]) -> dict[str, str]:
    """The reached `mmcv._ext` names the reduced CUDA set does not compile, with their paths."""
    from .op_set import kept_names

    kept = set(kept_names(cuda=True))
    return {name: path for name, path in sorted(reached.items()) if name not in kept}


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="upstream_env.op_reach", description=__doc__.split("\n\n")[0])
    ap.add_argument("configs", nargs="*", type=Path, help="config files (default: every supported one)")
    ap.add_argument(
        "--checkout", type=Path, help="the code root (default: the applied StreamPETR checkout's)"
    )
    ap.add_argument(
        "--check", action="store_true", help="exit 1 naming each op a config reaches outside the CUDA set"
    )
    args = ap.parse_args(None if argv is None else list(argv))
    args.checkout = _code_root(args.checkout)
    with contextlib.redirect_stdout(sys.stderr):
        _load_checkout(args.checkout)
    configs = args.configs or supported_configs(args.checkout)
    out, bad = {}, 0
    for config in configs:
        with contextlib.redirect_stdout(sys.stderr):  # what the plugin prints on import or build
            out[str(config)] = reach = reach_config(config)
        print(f"{config}: {', '.join(sorted(reach)) or '-'}", file=sys.stderr, flush=True)
        for name, path in outside_the_set(reach).items() if args.check else ():
            bad += 1
            print(f"OUTSIDE THE CUDA OP SET: {config}: {name}, reached by {path}", file=sys.stderr)
    print(json.dumps(out, indent=1, sort_keys=True))
    if bad:
        print(f"{bad} op(s) outside upstream_env/op_set.py's KEPT_CUDA: add them there", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
