"""Checkpoints of the patched ``custom_train_detector`` (``mmdet_train.py``): written whole or not
at all (:func:`write_checkpoints_atomically`), resumed after their last iteration and on the CPU
without CUDA (:func:`resume_training`)."""

from __future__ import annotations

import glob
import inspect
import os
import os.path as osp
from pathlib import Path
from typing import Any, BinaryIO

import torch
from mmcv.runner import IterBasedRunner

from ..atomic_file import replace_file


def write_checkpoints_atomically(runner: Any) -> None:
    """Make ``runner.save_checkpoint`` leave each checkpoint whole or absent, and latest.pth valid.

    mmcv 1.x writes in place and re-links latest.pth by unlink + symlink: a kill leaves a torn
    ``iter_N.pth`` (that --auto-resume picks) or no latest.pth. Here mmcv writes into the package's
    atomic writer's temporary file (:mod:`..atomic_file`, a hidden ``.iter_N.pth.partial``), and
    latest.pth is replaced by a rename too; the next save removes a killed writer's temporary files.
    """
    save = runner.save_checkpoint
    default_tmpl = inspect.signature(save).parameters["filename_tmpl"].default

    def save_checkpoint(
        out_dir: str,
        filename_tmpl: str = default_tmpl,
        meta: dict | None = None,
        save_optimizer: bool = True,
        create_symlink: bool = True,
    ) -> None:
        if "://" in str(out_dir):  # not a local directory: mmcv's own path
            options = dict(meta=meta, save_optimizer=save_optimizer, create_symlink=create_symlink)
            return save(out_dir, filename_tmpl, **options)
        for stale in glob.glob(osp.join(glob.escape(out_dir), ".*.partial")):
            os.remove(stale)
        number = runner.iter + 1 if isinstance(runner, IterBasedRunner) else runner.epoch + 1
        filename = filename_tmpl.format(number)
        final = Path(out_dir, filename)
        partial_tmpl = osp.join(osp.dirname(filename_tmpl), f".{osp.basename(filename_tmpl)}.partial")

        def write(_: BinaryIO) -> None:  # mmcv's own format, into the writer's file by its name
            save(out_dir, partial_tmpl, meta=meta, save_optimizer=save_optimizer, create_symlink=False)

        replace_file(final, write, tmp_name=f".{final.name}.partial")
        if create_symlink:
            replace_file(Path(out_dir, "latest.pth"), link=filename, tmp_name=".latest.pth.partial")

    runner.save_checkpoint = save_checkpoint


def resume_training(runner: Any, checkpoint: str) -> None:
    """``runner.resume(checkpoint)``, on the CPU without CUDA (mmcv's default map_location is
    ``torch.cuda.current_device()``), and an ``IterBasedRunner`` continues after the checkpoint's
    iteration: mmcv 1.x saves meta ``iter=runner.iter`` in ``after_train_iter``, before the counter
    moves on, so resuming ``iter_N.pth`` would start at N-1 and train iteration N a second time."""
    runner.resume(checkpoint, map_location="default" if torch.cuda.is_available() else "cpu")
    if isinstance(runner, IterBasedRunner):
        runner._iter += 1
        runner._inner_iter = runner._iter
