"""The original side of the comparison: the applied checkout on the path, the config pointed at the
data, and the real StreamPETR data set and DataLoader (``CustomNuScenesDataset``, transforms,
``InfiniteGroupEachSampleInBatchSampler``, mmcv ``collate``) as ``tools/train.py`` builds them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from overlaytool import REPO_ROOT, Target, code_root, load_targets

CHECKOUT = REPO_ROOT / "upstream" / "StreamPETR"
CONFIGS = {
    "r50": "projects/configs/StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e.py",
    "vov": "projects/configs/StreamPETR/stream_petr_vov_flash_800_bs2_seq_24e.py",
    "petrv1": "projects/configs/PETRv1/petrv1_r50_flash_704_24e.py",
    "8key": "projects/configs/StreamPETR/stream_petr_r50_flash_704_bs1_8key_2grad_24e.py",
}
DEFAULT_CONFIGS = ("r50", "vov")
ANN_TRAIN = "nuscenes2d_temporal_infos_train.pkl"


def streampetr_target(root: Path = REPO_ROOT) -> Target:
    """The StreamPETR target of the project's ``patches/config.toml`` (its first)."""
    return load_targets(root)[0]


def upstream_root(target: Target | None = None) -> Path:
    """The folder of the applied checkout holding ``projects/`` (``src/`` in a fork that moved its
    sources there): :func:`overlaytool.tree.code_root.code_root` of the StreamPETR target."""
    return code_root(target or streampetr_target())


def import_upstream(root: Path | None = None) -> None:
    """Put the applied checkout's code root (:func:`upstream_root`) at the end of ``sys.path`` (so an
    ``overlay/`` already on the path provides ``dali_streampetr``, not the checkout's copy of it) and
    register the plugin's modules."""
    root = upstream_root() if root is None else root
    if not (root / "projects" / "mmdet3d_plugin").is_dir():  # the package imported below
        raise FileNotFoundError(f"{root} holds no projects/mmdet3d_plugin")
    if str(root) not in sys.path:
        sys.path.append(str(root))
    import projects.mmdet3d_plugin  # noqa: F401  (registers datasets, transforms, samplers)


def config_path(config: str, target: Target | None = None) -> Path:
    """``r50`` / ``vov`` (under the code root, :func:`upstream_root`) or a path (absolute, or relative
    to the working directory, the checkout or its code root)."""
    target = target or streampetr_target()
    if config in CONFIGS:
        return upstream_root(target) / CONFIGS[config]
    for candidate in (Path(config), target.checkout / config):
        if candidate.is_file():
            return candidate.resolve()
    if (upstream_root(target) / config).is_file():
        return (upstream_root(target) / config).resolve()
    raise FileNotFoundError(f"config {config!r} not found (names: {', '.join(CONFIGS)})")


def read_config(config: str, target: Target | None = None):
    """The mmcv ``Config`` of ``config`` as the file says (:func:`config_path`)."""
    from mmcv import Config

    return Config.fromfile(str(config_path(config, target)))


def load_config(
    config: str, data_root: Path, samples_per_gpu: int | None = None, target: Target | None = None
):
    """The mmcv ``Config`` with the train set pointed at ``data_root`` (and the batch size, if given)."""
    cfg = read_config(config, target)
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
