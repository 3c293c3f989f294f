"""Build the two loaders on the same config, data and seed: the original StreamPETR DataLoader (real
``CustomNuScenesDataset``, transforms, ``InfiniteGroupEachSampleInBatchSampler``, mmcv ``collate``) and
the DALI loader, and step them in lock step with the DALI draws replayed into the original."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .replay import DrawReplayer, ReplayError

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = REPO_ROOT / "upstream" / "StreamPETR"
CONFIGS = {
    "r50": "projects/configs/StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e.py",
    "vov": "projects/configs/StreamPETR/stream_petr_vov_flash_800_bs2_seq_24e.py",
}
ANN_TRAIN = "nuscenes2d_temporal_infos_train.pkl"


def import_upstream(checkout: Path = CHECKOUT) -> None:
    """Put the applied checkout at the end of ``sys.path`` (so an ``overlay/`` already on the path
    provides ``dali_streampetr``, not the checkout's copy of it) and register the plugin's modules."""
    if not (checkout / "projects" / "mmdet3d_plugin").is_dir():
        raise FileNotFoundError(f"{checkout} is not an applied StreamPETR checkout; run `nox -s apply`")
    if str(checkout) not in sys.path:
        sys.path.append(str(checkout))
    import projects.mmdet3d_plugin  # noqa: F401  (registers datasets, transforms, samplers)


def config_path(config: str, checkout: Path = CHECKOUT) -> Path:
    """``r50`` / ``vov`` or a path (absolute, or relative to the checkout or the working directory)."""
    if config in CONFIGS:
        return checkout / CONFIGS[config]
    for candidate in (Path(config), checkout / config):
        if candidate.is_file():
            return candidate.resolve()
    raise FileNotFoundError(f"config {config!r} not found (names: {', '.join(CONFIGS)})")


def load_config(config: str, data_root: Path, samples_per_gpu: int | None = None, checkout: Path = CHECKOUT):
    """The mmcv ``Config`` with the train set pointed at ``data_root`` (and the batch size, if given)."""
    from mmcv import Config

    cfg = Config.fromfile(str(config_path(config, checkout)))
    root = Path(data_root).resolve()
    cfg.data.train.data_root = f"{root}/"
    cfg.data.train.ann_file = str(root / ANN_TRAIN)
    if samples_per_gpu is not None:
        cfg.data.samples_per_gpu = samples_per_gpu
    return cfg


def original_dataset(cfg: Any):
    """The real training data set, built from the config as ``tools/train.py`` does."""
    from mmdet3d.datasets import build_dataset

    return build_dataset(cfg.data.train)


def original_loader(cfg: Any, dataset: Any, seed: int):
    """The DataLoader ``custom_train_detector`` builds (``dist=True``, world size 1 here, no workers:
    the replay runs in this process)."""
    from projects.mmdet3d_plugin.datasets.builder import build_dataloader

    return build_dataloader(
        dataset,
        cfg.data.samples_per_gpu,
        0,
        1,
        dist=True,
        seed=seed,
        shuffler_sampler=cfg.data.shuffler_sampler,
        nonshuffler_sampler=cfg.data.nonshuffler_sampler,
        runner_type=cfg.runner,
    )


@dataclass
class BatchPair:
    """One iteration: the DALI batch (plain + collated), the original collated batch, and per slot the
    dataset index each side used and the draw values upstream consumed."""

    iteration: int
    dali: dict[str, Any]
    dali_collated: dict[str, Any]
    original: dict[str, Any]
    dali_indices: list[int]
    original_indices: list[int]
    used_draws: list[dict[str, Any]]


class LockStep:
    """Iterate both loaders; before each original frame arm the replayer with the DALI slot's draw."""

    def __init__(self, cfg: Any, data_root: Path, seed: int = 0, **dali_overrides: Any) -> None:
        from dali_streampetr.iterator import build_loader

        self.cfg, self.seed = cfg, seed
        self.dataset = original_dataset(cfg)
        self.replayer = DrawReplayer(self.dataset)
        self._queue: list[tuple[int, Any]] = []
        self._seen: list[tuple[int, dict]] = []
        self._prepare = self.dataset.prepare_train_data
        self.dataset.prepare_train_data = self._prepare_train_data
        self.original = iter(original_loader(cfg, self.dataset, seed))
        self.dali = build_loader(cfg, data_root, rank=0, world_size=1, seed=seed, **dali_overrides)

    def _prepare_train_data(self, index: int) -> dict:
        if not self._queue:
            raise ReplayError(f"the original sampler asked for frame {index} beyond the batch")
        _, draw = self._queue.pop(0)
        self.replayer.arm(draw)
        sample = self._prepare(index)
        self._seen.append((index, self.replayer.finish()))
        return sample

    def __iter__(self) -> Iterator[BatchPair]:
        return self

    def __next__(self) -> BatchPair:
        from dali_streampetr.mmdet_adapter import to_collated

        iteration = self.dali.iteration
        batch = next(self.dali)
        self._queue = [(r["index"], r["draw"]) for r in batch["dali"]]
        self._seen = []
        original = next(self.original)
        if self._queue:
            raise ReplayError(f"the original batch used {len(self._seen)} frames, the DALI batch has more")
        return BatchPair(
            iteration=iteration,
            dali=batch,
            dali_collated=to_collated(batch),
            original=original,
            dali_indices=[r["index"] for r in batch["dali"]],
            original_indices=[i for i, _ in self._seen],
            used_draws=[u for _, u in self._seen],
        )

    def close(self) -> None:
        self.dali.close()
