"""The numpy globals an mmcv checkpoint's pickle may name beyond torch's weights_only allowlist
(numpy arrays, scalars and dtypes: a hook's message, say), for the probe of
``tools/tool_hooks/checkpoint_probe.py`` and the loader's resume hook alike.

numpy 2 moved ``numpy.core`` to ``numpy._core``; a pickle names the module of the numpy that wrote
it, so both names are allowed for the same functions: checkpoints written under numpy 1 resume.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy._core import multiarray

# the module a pickle names for numpy's array and scalar constructors: numpy 1, numpy 2
MULTIARRAY_MODULES = ("numpy.core.multiarray", "numpy._core.multiarray")


def checkpoint_globals() -> list[Any]:
    """For ``torch.serialization.add_safe_globals`` / ``safe_globals``: objects, and (object, name)
    pairs for the names a numpy-1 or numpy-2 pickle gives them."""
    named = [
        (getattr(multiarray, name), f"{module}.{name}")
        for module in MULTIARRAY_MODULES
        for name in ("_reconstruct", "scalar")
    ]
    dtypes = sorted({type(np.dtype(c)) for c in "?bhilqBHILQefdFD"}, key=str)
    return [*named, np.ndarray, np.dtype, *dtypes]
