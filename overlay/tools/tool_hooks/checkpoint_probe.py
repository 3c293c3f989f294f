"""Which checkpoint ``tools/train.py`` resumes from: ``--resume-from`` checked, ``--auto-resume``
chosen (stdlib, torch and the loader's mmcv-free root only; docs/training.md#resume-after-preemption).

Probing runs no code from a file: the globals its pickle names are read without loading it, then it
is loaded with ``weights_only=True`` (torch's allowlist plus :data:`CHECKPOINT_GLOBALS`).
"""

from __future__ import annotations

import glob
import os.path as osp
import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from dali_streampetr import checkpoint_globals

# What mmcv checkpoints hold beyond torch's weights_only allowlist (numpy arrays, scalars, dtypes,
# under numpy 1's and numpy 2's names). Added to torch's allowlist when a run resumes, so the probe
# and mmcv's own load of the chosen file (torch.load's default weights_only=True) accept the same files.
CHECKPOINT_GLOBALS = checkpoint_globals()


def checkpoint_problem(path: str) -> str | None:
    """Why the checkpoint at ``path`` cannot be resumed from (naming any global its pickle names outside
    the allowlist), or None when it loads; nothing in the file runs (see the module doc)."""
    torch.serialization.add_safe_globals(CHECKPOINT_GLOBALS)
    unsafe = []
    try:
        unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(path)
        if not unsafe:
            checkpoint = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    except pickle.UnpicklingError as exc:  # a global named only while loading: refused by torch
        if not str(exc).startswith("Weights only load failed"):
            return torn_checkpoint(exc)
        unsafe = [str(exc).split("Unsupported global: GLOBAL ", 1)[-1].split(" ", 1)[0]]
    except Exception as exc:  # a torn zip archive, a truncated legacy pickle, ...
        return torn_checkpoint(exc)
    if unsafe:
        return (
            f"its pickle names {', '.join(sorted(unsafe))}, which loading it would call (it "
            "could run code): not loaded. If you trust the file and its writer, load it "
            "yourself with torch.load(weights_only=False) and save its contents as plain data"
        )
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        return "it loads but holds no state_dict: it is not a training checkpoint"
    return None


def torn_checkpoint(exc: BaseException) -> str:
    return (
        f"the file is incomplete or corrupt and does not load ({type(exc).__name__}: "
        f"{str(exc).splitlines()[0] if str(exc) else ''}); a write that was interrupted "
        "(a killed run) leaves such a file: resume from an earlier checkpoint or delete it"
    )


def resumable_checkpoints(work_dir: str) -> Iterator[str]:
    """Every *_N.pth by N, highest first, then latest.pth unless it is one of them (a link to the
    newest, or a copy where links are not made): the numbers decide, latest.pth is a hint only."""
    named = glob.glob(osp.join(glob.escape(work_dir), "*_*.pth"))
    numbered = []
    for path in named:
        number = osp.basename(path)[: -len(".pth")].split("_")[-1]
        if number.isdigit():
            numbered.append((int(number), path))
    paths = [p for _, p in sorted(numbered, reverse=True)] + [osp.join(work_dir, "latest.pth")]
    seen = set()
    for path in paths:
        if osp.isfile(path) and osp.realpath(path) not in seen:
            seen.add(osp.realpath(path))
            yield path


def find_resumable_checkpoint(
    work_dir: str, logger: Any, checks: Sequence[Callable[[str], str | None]] = ()
) -> str | None:
    """The newest checkpoint in ``work_dir`` that loads and that every check accepts (a check
    returns why it refuses one, or None); each file skipped is logged with the reason."""
    for path in resumable_checkpoints(work_dir):
        problem = checkpoint_problem(path)
        for check in checks:
            problem = problem or check(path)
        if problem is None:
            return path
        logger.warning(f"auto-resume: skipped {path}: {problem}")
    return None


def check_resume_from(path: str) -> str:
    """``path`` of ``--resume-from``, or an error naming it: no such file, or one that does not load."""
    if not osp.isfile(path):
        raise FileNotFoundError(f"--resume-from {path}: no such checkpoint file")
    problem = checkpoint_problem(path)
    if problem:
        raise RuntimeError(f"--resume-from {path}: {problem}")
    return path


def auto_resume(cfg: Any, datasets: Sequence[Any], logger: Any, distributed: bool) -> str | None:
    """``--auto-resume``'s checkpoint in ``cfg.work_dir``, chosen after the training loaders are built
    (a loader may refuse a checkpoint: its ``checkpoint_problem``); every rank takes rank 0's choice.
    Logs the choice, or that a new run starts."""
    checks = [d.checkpoint_problem for d in datasets if hasattr(d, "checkpoint_problem")]
    chosen = find_resumable_checkpoint(cfg.work_dir, logger, checks)
    if distributed:  # every rank resumes from rank 0's choice
        choice = [chosen]
        torch.distributed.broadcast_object_list(choice, src=0)
        chosen = choice[0]
    logger.info(
        f"auto-resume: resuming from {chosen}"
        if chosen
        else f"auto-resume: no checkpoint in {cfg.work_dir}, starting a new run"
    )
    return chosen
