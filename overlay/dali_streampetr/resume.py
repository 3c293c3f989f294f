"""The DALI loader's place in a checkpoint: what is stored, and whether a stored state fits this run.

The stream (frame order, queues and augmentation draws) is a pure function of (seed, rank, world
size, mode, training mode, data, iteration) - in the epoch-based modes the epoch is the iteration
divided by the epoch's length - so a checkpoint needs only those fields per rank; on resume each rank
checks the stored fields against its own and continues at the runner's iteration. No mmcv here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from .iterator import DaliStreamLoader

META_KEY = "dali_loader"  # checkpoint['meta'][META_KEY] = {"ranks": [state of rank 0, rank 1, ...]}

# field -> what the user can change to make a stored state fit
FIELD_HINTS = {
    "version": "the checkpoint was written by another version of the loader",
    "training_mode": "the config's training mode (seq_mode, queue_length) differs from the run that wrote it",
    "world_size": "resume with as many processes as the run that wrote it (--gpus/--nproc_per_node {stored})",
    "mode": "set data_loading_config.replicate_dataset_per_gpu={replicate} as in the run that wrote it",
    "offset_order_per_rank": "set data_loading_config.offset_order_per_rank={stored} as in that run",
    "samples_per_gpu": "set data.samples_per_gpu={stored} as in the run that wrote it",
    "seed": "pass --seed {stored} as the run that wrote it did",
    "seq_split_num": "set data.train.seq_split_num={stored} as in the run that wrote it",
    "frames": "data.train.ann_file is not the info file the run was started with; point it back to that file",
    "data": "data.train.ann_file is not the info file the run was started with; point it back to that file",
    "groups_num": "data.train.ann_file or seq_split_num differ from the run that wrote it",
    "stream_seed": "the per-rank stream seed differs (seed, rank or offset_order_per_rank changed)",
    "batches_per_epoch": "the epoch length differs (data.samples_per_gpu, the world size or the info file)",
}
# Fields of states written before they existed: the value those runs had.
BEFORE = {"training_mode": "streaming", "batches_per_epoch": None}
COMPARED = tuple(FIELD_HINTS)


class LoaderStateMismatch(ValueError):
    """A checkpoint's loader state does not fit this run (the message names the field and the way out)."""


def data_fingerprint(loader: DaliStreamLoader) -> str:
    """SHA-1 over the frame tokens in stream order: equal only for the same info file content."""
    digest = hashlib.sha1()
    for frame in loader.frames:
        digest.update(frame.token.encode() + b"\0")
    return digest.hexdigest()


def stream_state(loader: DaliStreamLoader) -> dict[str, Any]:
    """This rank's state for the checkpoint: the loader's own ``state_dict`` plus the settings the
    stream depends on that it does not record (batch, order offset, sequence split, data)."""
    return {
        **loader.state_dict(),
        "samples_per_gpu": loader.cfg.samples_per_gpu,
        "offset_order_per_rank": loader.cfg.offset_order_per_rank,
        "seq_split_num": loader.cfg.seq_split_num,
        "data": data_fingerprint(loader),
        "batches_per_epoch": len(loader) if loader.cfg.mode.epoch_based else None,
    }


def fitting_state(
    stored: Mapping[str, Any] | None, mine: Mapping[str, Any], *, iteration: int, checkpoint: str
) -> dict[str, Any]:
    """The state this rank resumes with: ``mine`` at ``iteration`` (the runner's), once every field
    of this rank's entry in ``stored`` (``checkpoint['meta'][META_KEY]``) is found equal.

    Raises :class:`LoaderStateMismatch` naming the first differing field, both values and what to do.
    """
    ranks = list((stored or {}).get("ranks") or [])
    way_out = (
        f"Or start a new data stream from these weights: --cfg-options load_from={checkpoint} "
        "instead of --resume-from."
    )
    if len(ranks) != mine["world_size"]:
        raise LoaderStateMismatch(
            f"{checkpoint}: the DALI loader state holds {len(ranks)} rank(s), this run has world_size "
            f"{mine['world_size']}: " + FIELD_HINTS["world_size"].format(stored=len(ranks)) + f". {way_out}"
        )
    theirs = ranks[mine["rank"]]
    for field in COMPARED:
        stored = theirs.get(field, BEFORE.get(field))
        if stored != mine[field]:
            hint = FIELD_HINTS[field].format(stored=stored, replicate=theirs.get("mode") == "replicate")
            raise LoaderStateMismatch(
                f"{checkpoint}: the DALI loader state of rank {mine['rank']} does not fit this run: "
                f"{field} is {stored!r} in the checkpoint, {mine[field]!r} here. {hint}. {way_out}"
            )
    return {**mine, "iteration": iteration}
