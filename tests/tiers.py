"""The test tiers: which one a test belongs to, whether the GPU tier runs here, what CI accepts.

Used by ``tests/conftest.py`` (the skips and the tier summary) and tested by ``tests/test_tiers.py``.
A tier is chosen by its marker (``upstream``, ``stack``, ``gpu``; none: hermetic); a test file's
name ends in the highest tier its tests are marked with (``test_<subject>_stack.py``; hermetic
files have no suffix): :func:`misnamed_test_files`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

TIERS = ("upstream", "stack", "gpu")  # lowest first; hermetic is the tier of unmarked tests
NO_CUDA_DEVICE = "gpu tier skipped: no CUDA device"  # the one skip a CI run accepts


def highest_tier(markers: Iterable[str]) -> str:
    """The tier of a test carrying ``markers``: the highest of them, else hermetic."""
    marked = set(markers)
    return next((t for t in reversed(TIERS) if t in marked), "hermetic")


# --- the GPU tier: torch and DALI must both see a CUDA device -------------------------------------


def gpu_skip_reason(
    torch_version: str, cuda_build: bool, torch_devices: int, dali_devices: int
) -> str | None:
    """None when torch and DALI each see a CUDA device; else the GPU tier's skip line.

    Only "torch sees none" is the no-device case (no GPU here, or a CPU build of torch in this
    interpreter); torch seeing a device that DALI does not is a broken install, named as such.
    """
    if torch_devices > 0 and dali_devices > 0:
        return None
    if torch_devices <= 0:
        build = "" if cuda_build else " (a CPU build; the tier runs in `nox -s tests_gpu`)"
        return f"{NO_CUDA_DEVICE}: torch {torch_version} sees none{build}"
    return (
        f"gpu tier skipped: torch {torch_version} sees {torch_devices} CUDA device(s) but DALI sees none "
        "(DALI's CUDA build does not fit this driver: see docs/gpu.md)"
    )


def cuda_devices() -> tuple[str, bool, int, int]:
    """:func:`gpu_skip_reason`'s inputs in this interpreter: torch's version, whether it is a CUDA
    build, the CUDA devices torch sees and those DALI sees."""
    import torch

    torch_devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    try:
        from nvidia.dali import backend

        dali_devices = int(backend.GetCUDADeviceCount())
    except Exception:  # no driver, or a DALI without CUDA: it sees no device
        dali_devices = 0
    return torch.__version__, torch.version.cuda is not None, torch_devices, dali_devices


# --- what a CI run accepts ------------------------------------------------------------------------


def is_ci(environ: Mapping[str, str]) -> bool:
    """Whether this is a CI run (``CI=true``, as CI services set it; ``CI=1`` too)."""
    return environ.get("CI", "").strip().lower() in ("true", "1")


def accepted_under_ci(tier: str, reason: str) -> bool:
    """A CI run accepts one skip: a GPU-tier test where torch sees no CUDA device. Everything else
    a project step can install or build (the upstream cache, the env, SLURM) must run."""
    return tier == "gpu" and reason.startswith(NO_CUDA_DEVICE)


# --- the naming rule ------------------------------------------------------------------------------


def marked_tiers(source: str) -> set[str]:
    """The tier markers (``pytest.mark.<tier>``) a test file's source uses anywhere."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in TIERS
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "mark"
        ):
            found.add(node.attr)
    return found


def name_tier(path: Path) -> str | None:
    """The tier a test file's name says: its ``_<tier>`` suffix, else hermetic; None when a tier
    word stands anywhere else in the name (``test_stack_train.py``), which would mislead."""
    tier = next((t for t in TIERS if path.stem.endswith(f"_{t}")), "hermetic")
    rest = path.stem.removesuffix(f"_{tier}") + "_"
    return None if any(f"_{t}_" in rest for t in ("stack", "gpu")) else tier


def misnamed_test_files(root: Path) -> list[str]:
    """``path: named <tier>, marked <tier>`` for each ``test_*.py`` under ``root`` whose name
    disagrees with the highest tier its tests are marked with (named None: a misleading name)."""
    wrong = []
    for path in sorted(root.rglob("test_*.py")):
        marked = highest_tier(marked_tiers(path.read_text(encoding="utf-8")))
        named = name_tier(path)
        if marked != named:
            wrong.append(f"{path.relative_to(root)}: named {named}, marked {marked}")
    return wrong
