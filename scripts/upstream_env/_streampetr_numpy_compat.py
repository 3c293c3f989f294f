"""NumPy < 1.24 aliases for mmdet3d v1.0.0rc6, installed into the upstream env by `upstream_env`.

mmdet3d rc6 still uses aliases NumPy 1.24 removed (`np.bool` in `ObjectRangeFilter`, which the
StreamPETR training pipeline runs; `np.int`, `np.long`, `np.float` in other paths). A `.pth` file
imports this module at start-up; it adds the aliases when numpy is first imported (lazily, so
interpreters that never import numpy pay nothing). It changes nothing else.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

ALIASES = {"bool": bool, "int": int, "long": int, "float": float, "complex": complex, "object": object}


def add_aliases(numpy_module: object) -> None:
    """Set the removed aliases on a numpy module that lacks them."""
    for name, value in ALIASES.items():
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
