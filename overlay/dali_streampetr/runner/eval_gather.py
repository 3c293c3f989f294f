"""The gather of the patched ``custom_multi_gpu_test`` (``core/apis/test.py``): every rank's results
back at their frames' dataset indices, so shards of unequal length (``test_sharding='scenes'``) and
empty ranks gather in dataset order (:func:`..sampling.eval_shards.in_dataset_order`)."""

from __future__ import annotations

import os.path as osp
import shutil
import tempfile
from collections.abc import Iterable
from typing import Any

import mmcv
import torch
import torch.distributed as dist
from mmcv.runner import get_dist_info

from ..sampling.eval_shards import in_dataset_order


def gather_results(
    result_part: list, data_loader: Any, tmpdir: str | None = None, *, gpu_collect: bool = False
) -> list | None:
    """Rank 0: every rank's results in dataset order, each at the dataset index this rank's sampler
    yielded for it, through the process group (``gpu_collect``) or a shared folder."""
    indices, size = [int(i) for i in data_loader.sampler], len(data_loader.dataset)
    if gpu_collect:
        return gather_results_gpu(result_part, size, indices=indices)
    return gather_results_cpu(result_part, size, tmpdir, indices=indices)


def gather_results_cpu(
    result_part: list, size: int, tmpdir: str | None = None, *, indices: Iterable[int]
) -> list | None:
    """Rank 0: the results of every rank in dataset order (`indices`: the dataset index of each of
    this rank's results), through a shared folder; the other ranks: None."""
    rank, world_size = get_dist_info()
    if tmpdir is None:  # rank 0 makes one and broadcasts its name, padded with spaces (32)
        MAX_LEN = 512
        dir_tensor = torch.full((MAX_LEN,), 32, dtype=torch.uint8, device="cuda")
        if rank == 0:
            mmcv.mkdir_or_exist(".dist_test")
            tmpdir = tempfile.mkdtemp(dir=".dist_test")
            tmpdir = torch.tensor(bytearray(tmpdir.encode()), dtype=torch.uint8, device="cuda")
            dir_tensor[: len(tmpdir)] = tmpdir
        dist.broadcast(dir_tensor, 0)
        tmpdir = dir_tensor.cpu().numpy().tobytes().decode().rstrip()
    else:
        mmcv.mkdir_or_exist(tmpdir)
    mmcv.dump((list(indices), result_part), osp.join(tmpdir, f"part_{rank}.pkl"))
    dist.barrier()
    if rank != 0:
        return None
    part_list = [mmcv.load(osp.join(tmpdir, f"part_{i}.pkl")) for i in range(world_size)]
    ordered_results = in_dataset_order(part_list, size)
    shutil.rmtree(tmpdir)
    return ordered_results


def gather_results_gpu(result_part: list, size: int, *, indices: Iterable[int]) -> list | None:
    """As gather_results_cpu, through the process group instead of a folder (all_gather_object)."""
    rank, world_size = get_dist_info()
    part_list: list[Any] = [None] * world_size
    dist.all_gather_object(part_list, (list(indices), result_part))
    return in_dataset_order(part_list, size) if rank == 0 else None
