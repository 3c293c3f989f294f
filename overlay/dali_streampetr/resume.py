"""The loader's resume state: one schema of its fields, how each is compared, and the fix per field.

The stream (frame order, queues and draws) is a pure function of (seed, rank, world size, mode,
training mode, data, iteration), so a state needs only those fields: a stored state is taken when
every checked field equals this loader's (:func:`check_state`, the one check of ``load_state_dict``,
the checkpoint hook and ``--auto-resume``), and the stream continues at its iteration. No mmcv here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

META_KEY = "dali_loader"  # checkpoint['meta'][META_KEY] = {"ranks": [state of rank 0, rank 1, ...]}
STATE_VERSION = 1
SAME_INFO_FILE = (
    "data.train.ann_file is not the info file the run was started with; point it back to that file"
)


class LoaderStateMismatch(ValueError):
    """A stored loader state does not fit this loader (the message names the field and the way out)."""


class Role(Enum):
    """How a field of a stored state is used on resume."""

    CHECKED = "must equal this loader's value"
    POSITION = "taken over: where the stream continues"
    RECORD = "written for the reader, not compared (follows from the others)"


@dataclass(frozen=True)
class StateField:
    """One field of the state: ``read(loader)`` is this loader's value; ``fix`` is what the user
    changes when a stored value differs (``{stored}``: the stored value, ``{replicate}``: whether the
    stored run replicated the data set); ``before`` the value of states written before the field."""

    name: str
    role: Role
    read: Callable[[Any], Any]
    fix: str = ""
    before: Any = None

    def stored(self, state: Mapping[str, Any]) -> Any:
        """The field's value in a stored ``state`` (``before`` when an older state lacks it)."""
        return state.get(self.name, self.before)


def data_fingerprint(loader: Any) -> str:
    """SHA-1 over the frame tokens in stream order: equal only for the same info file content."""
    digest = hashlib.sha1()
    for frame in loader.frames:
        digest.update(frame.token.encode() + b"\0")
    return digest.hexdigest()


def _epoch_length(loader: Any) -> int | None:
    return len(loader) if loader.cfg.mode.epoch_based else None


C, P, R = Role.CHECKED, Role.POSITION, Role.RECORD
# In the order a mismatch is looked for: the first differing checked field is the one named.
FIELDS = (
    StateField("version", C, lambda ld: STATE_VERSION,
               "the checkpoint was written by another version of the loader"),
    StateField("iteration", P, lambda ld: ld.iteration),
    StateField("training_mode", C, lambda ld: ld.cfg.mode.name,
               "the config's training mode (seq_mode, queue_length) differs from the run that wrote it",
               before="streaming"),
    StateField("world_size", C, lambda ld: ld.world_size,
               "resume with as many processes as the run that wrote it (--gpus/--nproc_per_node {stored})"),
    StateField("rank", C, lambda ld: ld.rank, "the state is another rank's: each rank loads its own entry"),
    StateField("mode", C, lambda ld: "replicate" if ld.sampler.replicate else "shard",  # the stored words
               "set data_loading_config.replicate_dataset_per_gpu={replicate} as in the run that wrote it"),
    StateField("offset_order_per_rank", C, lambda ld: ld.cfg.offset_order_per_rank,
               "set data_loading_config.offset_order_per_rank={stored} as in that run"),
    StateField("samples_per_gpu", C, lambda ld: ld.cfg.samples_per_gpu,
               "set data.samples_per_gpu={stored} as in the run that wrote it"),
    StateField("seed", C, lambda ld: ld.seed, "pass --seed {stored} as the run that wrote it did"),
    StateField("seq_split_num", C, lambda ld: ld.cfg.seq_split_num,
               "set data.train.seq_split_num={stored} as in the run that wrote it"),
    StateField("frames", C, lambda ld: len(ld.frames), SAME_INFO_FILE),
    StateField("data", C, data_fingerprint, SAME_INFO_FILE),
    StateField("groups_num", C, lambda ld: ld.sampler.groups_num,
               "data.train.ann_file or seq_split_num differ from the run that wrote it"),
    StateField("stream_seed", C, lambda ld: ld.sampler.seed,
               "the per-rank stream seed differs (seed, rank or offset_order_per_rank changed)"),
    StateField("batches_per_epoch", C, _epoch_length,
               "the epoch length differs (data.samples_per_gpu, the world size or the info file)"),
    StateField("epoch", R, lambda ld: ld.iteration // len(ld) if ld.cfg.mode.epoch_based else 0),
)  # fmt: skip
FIELD = {f.name: f for f in FIELDS}
CHECKED = tuple(f for f in FIELDS if f.role is Role.CHECKED)


def loader_state(loader: Any) -> dict[str, Any]:
    """The loader's state: every field of :data:`FIELDS`, read from ``loader``."""
    return {f.name: f.read(loader) for f in FIELDS}


def check_state(
    stored: Mapping[str, Any],
    mine: Mapping[str, Any],
    *,
    origin: str = "the loader state",
    kept_in: str = "the state",
    way_out: str = "",
) -> None:
    """Raise :class:`LoaderStateMismatch` naming the first checked field whose value in ``stored``
    differs from ``mine`` (both values and the field's fix); ``origin`` names the stored state,
    ``kept_in`` where it was kept, ``way_out`` is appended to the message."""
    for field in CHECKED:
        theirs = field.stored(stored)
        if theirs != mine[field.name]:
            fix = field.fix.format(stored=theirs, replicate=stored.get("mode") == "replicate")
            raise LoaderStateMismatch(
                f"{origin} does not fit this run: {field.name} is {theirs!r} in {kept_in}, "
                f"{mine[field.name]!r} here. {fix}." + (f" {way_out}" if way_out else "")
            )


def fitting_state(
    stored: Mapping[str, Any] | None, mine: Mapping[str, Any], *, iteration: int, checkpoint: str
) -> dict[str, Any]:
    """The state this rank resumes with: ``mine`` at ``iteration`` (the runner's), once this rank's
    entry of ``stored`` (``checkpoint['meta'][META_KEY]``) passes :func:`check_state` (else it raises)."""
    ranks = list((stored or {}).get("ranks") or [])
    way_out = (
        f"Or start a new data stream from these weights: --cfg-options load_from={checkpoint} "
        "instead of --resume-from."
    )
    if len(ranks) != mine["world_size"]:
        raise LoaderStateMismatch(
            f"{checkpoint}: the DALI loader state holds {len(ranks)} rank(s), this run has world_size "
            f"{mine['world_size']}: " + FIELD["world_size"].fix.format(stored=len(ranks)) + f". {way_out}"
        )
    check_state(
        ranks[mine["rank"]],
        mine,
        origin=f"{checkpoint}: the DALI loader state of rank {mine['rank']}",
        kept_in="the checkpoint",
        way_out=way_out,
    )
    return {**mine, "iteration": iteration}
