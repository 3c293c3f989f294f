"""Which test frames each of K ranks evaluates (``data_loading_config.test_sharding``: ``'upstream'``,
the plugin's ``DistributedSampler(shuffle=False)`` chunks, or ``'scenes'``, whole scenes per rank;
docs/loader.md, "Evaluation"), and the ranks' results put back in dataset order. Numpy only: the
plugin's sampler and the DALI test loader both use it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..settings import ConfigValueError, config_get, uses_dali

SCENES, UPSTREAM = "scenes", "upstream"
SHARDINGS = (SCENES, UPSTREAM)
SHARDING_KEY = "data_loading_config.test_sharding"


def sharding_of(cfg: Any) -> str:
    """The test sharding ``cfg`` selects: ``data_loading_config.test_sharding`` where it is given,
    else ``'scenes'`` for a config that trains on DALI (``uses_dali(cfg, 'train')``) and
    ``'upstream'`` for the others (:func:`checked_sharding`)."""
    value = config_get(config_get(cfg, "data_loading_config") or {}, "test_sharding")
    return checked_sharding(value, dali=uses_dali(cfg, "train"))


def checked_sharding(value: Any, *, dali: bool) -> str:
    """``value`` (``data_loading_config.test_sharding``, None where the config has none) checked, or the
    default: ``'scenes'`` for a config that trains on DALI (``dali``), else ``'upstream'``. The default
    follows what the config trains on, not which test loader runs, so that
    ``use_dali_test_pipeline=True|False`` compares the two loaders on the same shards."""
    if value is None:
        return SCENES if dali else UPSTREAM
    if value not in SHARDINGS:
        raise ConfigValueError(f"{SHARDING_KEY}={value!r}: one of {list(SHARDINGS)}")
    return value


def part_line(rank: int, world_size: int, sharding: str, frames: Sequence[int], size: int) -> str:
    """What a rank prints of its part: ``rank 1 of 3 (test_sharding=scenes): 3 of 6 frames, 3..5``."""
    span = f", {frames[0]}..{frames[-1]}" if len(frames) else ""
    return f"rank {rank} of {world_size} (test_sharding={sharding}): {len(frames)} of {size} frames{span}"


def scene_starts(scene_ids: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Index of the first frame of every scene, then N: a scene is a run of consecutive frames with
    one scene id (the model resets its memory where the id changes from the frame before)."""
    ids = np.asarray(scene_ids)
    if ids.ndim != 1:
        raise ValueError(f"scene ids must be one id per frame, got an array of shape {ids.shape}")
    changes = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    return np.concatenate([[0] if len(ids) else [], changes, [len(ids)]]).astype(np.int64)


def scene_shards(scene_ids: Sequence[Any] | np.ndarray, world_size: int) -> list[range]:
    """The frames of each of ``world_size`` ranks: rank ``r`` ends where the ideal cut ``(r + 1) * N / K``
    moves to the nearest scene boundary (a tie: the earlier one), so ranks are contiguous runs of
    whole scenes in dataset order, every frame in exactly one rank, and a rank is empty where two
    cuts meet (K above the number of scenes, or a scene longer than N / K).
    A rank holds at most the ideal share plus one of its own scenes (a cut moves at most half a scene)."""
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    starts = scene_starts(scene_ids)
    n = int(starts[-1])
    ideal = np.arange(1, world_size, dtype=np.int64) * n  # K times the ideal cuts, in integers
    k_starts = starts * world_size
    after = np.searchsorted(k_starts, ideal, side="left")  # first boundary at or after each cut (N is one)
    before = np.maximum(after - 1, 0)
    cuts = np.where(k_starts[after] - ideal < ideal - k_starts[before], starts[after], starts[before])
    bounds = [0, *cuts.tolist(), n]
    return [range(bounds[r], bounds[r + 1]) for r in range(world_size)]


def upstream_chunks(size: int, world_size: int) -> list[list[int]]:
    """Upstream's test frames per rank: ``0 .. size-1`` repeated to ``world_size * ceil(size / world_size)``
    and cut into equal contiguous chunks (the last ranks' ends wrap around to the first frames)."""
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    per_rank = -(-size // world_size)
    padded = [i % size for i in range(per_rank * world_size)] if size else []
    return [padded[r * per_rank : (r + 1) * per_rank] for r in range(world_size)]


def frames_without_memory(
    scene_ids: Sequence[Any] | np.ndarray, shards: Sequence[Sequence[int]]
) -> list[int]:
    """The frames whose kept result (the first) a rank computes without the memory one process has:
    none with scene shards; with upstream's chunks, the frames after each cut up to their scene's end."""
    ids = np.asarray(scene_ids)
    first = np.zeros(len(ids), dtype=bool)
    first[scene_starts(ids)[:-1]] = True
    wrong, seen = [], set()
    for shard in shards:
        prev, prev_ok = None, False
        for i in shard:
            ok = (prev is None or ids[prev] != ids[i]) if first[i] else (prev == i - 1 and prev_ok)
            if not ok and i not in seen:
                wrong.append(int(i))
            seen.add(i)
            prev, prev_ok = i, ok
    return sorted(wrong)


def in_dataset_order(parts: Sequence[tuple[Sequence[int], Sequence[Any]]], size: int) -> list[Any]:
    """The ranks' ``parts`` (per rank: its results' dataset indices, and the results) in dataset order,
    one per frame; a frame evaluated twice (upstream's wrap-around) keeps its first result. Raises
    ``ValueError`` naming a rank whose counts disagree or index is out of range, or the missing frames."""
    ordered: list[Any] = [None] * size
    seen = np.zeros(size, dtype=bool)
    for rank, (indices, results) in enumerate(parts):
        if len(indices) != len(results):
            raise ValueError(
                f"rank {rank} returned {len(results)} results for the {len(indices)} frames of its shard"
            )
        for index, result in zip(indices, results, strict=True):
            if not 0 <= index < size:
                raise ValueError(f"rank {rank} returned frame {index}, outside the {size} frames of the set")
            if not seen[index]:
                seen[index] = True
                ordered[index] = result
    missing = np.flatnonzero(~seen)
    if len(missing):
        shown = ", ".join(str(i) for i in missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise ValueError(f"{len(missing)} of {size} frames came back from no rank: {shown}")
    return ordered
