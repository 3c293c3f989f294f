"""Names NumPy removed that mmdet3d v1.0.0rc6 still uses, installed into the upstream env by `upstream_env`.

- NumPy 1.24 removed the builtin aliases: `np.int`, `np.float` (in mmdet3d's data paths) and
  others. (`np.bool` and `np.long`, in `ObjectRangeFilter`, are back in NumPy 2 as its own types.)
- NumPy 2.4 removed `np.in1d` (mmdet3d's ScanNet evaluation): the same as `np.isin` of the
  flattened first argument, which is what it was.

A `.pth` file imports this module at start-up; it adds the names when numpy is first imported
(lazily, so interpreters that never import numpy pay nothing). It changes nothing else; every name
it adds is listed in docs/upstream-env.md#numpy-2 with the code that needs it.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

ALIASES = {"int": int, "float": float, "complex": complex, "object": object}


def add_aliases(numpy_module: object) -> None:
    """Set the removed names on a numpy module that lacks them."""
    isin = numpy_module.isin  # type: ignore[attr-defined]
    ravel = numpy_module.ravel  # type: ignore[attr-defined]

    def in1d(
        ar1: object, ar2: object, assume_unique: bool = False, invert: bool = False, **kw: object
    ) -> object:
        return isin(ravel(ar1), ar2, assume_unique=assume_unique, invert=invert, **kw)

    for name, value in {**ALIASES, "in1d": in1d}.items():
        if name not in vars(numpy_module):
            setattr(numpy_module, name, value)


class _NumpyAliasFinder(importlib.abc.MetaPathFinder):
    """Wraps numpy's loader once so the aliases exist as soon as `import numpy` returns."""

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001, D102
        if fullname != "numpy":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("numpy")
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_alias(module: object) -> None:
            exec_module(module)
            add_aliases(module)

        spec.loader.exec_module = exec_and_alias  # type: ignore[method-assign]
        return spec


def install() -> None:
    if "numpy" in sys.modules:
        add_aliases(sys.modules["numpy"])
    elif not any(isinstance(f, _NumpyAliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _NumpyAliasFinder())


install()
