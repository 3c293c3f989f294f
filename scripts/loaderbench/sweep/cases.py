"""The benchmark configurations and how each loader is built from the same StreamPETR config (the
profiles ``r50``, ``accv``, ``8key`` and ``eval``: docs/benchmark.md). Runs in the upstream env with
the applied checkout on ``sys.path``."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from overlaytool import REPO_ROOT as ROOT

R50_CONFIG = "projects/configs/StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e.py"
KEY8_CONFIG = "projects/configs/StreamPETR/stream_petr_r50_flash_704_bs1_8key_2grad_24e.py"
FRAMES_PER_BATCH = {"r50": 2, "accv": 8, "8key": 8, "eval": 1}  # samples x frames per sample
EVAL_COPIES = 10  # the eval profile's test set: the train frames this many times (time-shifted)
ACCV_IDA = {"final_dim": (372, 1024), "resize_lim": (0.64, 0.7)}
ACCV_BATCH = 8
ACCV_SEQ_SPLIT = 4  # 8 batch slots need >= 8 sequence groups; the synthetic train split has 3 scenes


# DALI settings measured beside the defaults in the same run (what each setting buys):
VARIANTS: dict[str, dict[str, Any]] = {
    "pyw0": {"py_num_workers": 0},  # the external source in the main process, no worker process
    "noroi": {"roi_decode": False},  # decode whole images (what ROI decoding saves)
    "fast": {"image_path": "fast"},  # the fast image path: other pixels, the same targets (docs/loader.md)
}
R50_VARIANTS = (("pyw0", 1), ("pyw0", 2), ("fast", 1), ("fast", 2), ("noroi", 1))


@dataclass(frozen=True)
class Case:
    """One measured configuration."""

    profile: str  # "r50" | "accv"
    loader: str  # "torch" | "dali"
    workers: int = 0  # DataLoader workers (torch)
    threads: int = 0  # DALI CPU threads (dali)
    device: str = "cpu"  # DALI "cpu" | "gpu" (mixed decoding)
    variant: str = ""  # a key of VARIANTS: DALI settings other than the defaults

    @property
    def name(self) -> str:
        if self.loader == "torch":
            return f"{self.profile}/torch-w{self.workers}"
        return f"{self.profile}/dali-{self.device}-t{self.threads}" + (
            f"-{self.variant}" if self.variant else ""
        )

    @property
    def overrides(self) -> dict[str, Any]:
        return dict(VARIANTS[self.variant]) if self.variant else {}

    @property
    def cores(self) -> int:
        """Cores the configuration is meant to use: workers (the main process waits) or DALI threads."""
        return max(1, self.workers) if self.loader == "torch" else self.threads

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "name": self.name, "cores": self.cores}


def sweep(
    profiles: tuple[str, ...] = ("r50", "accv"),
    gpu: bool = False,
    accv_full: bool = False,
    variants: bool = True,
    workers: tuple[int, ...] | None = None,
    threads: tuple[int, ...] | None = None,
    dali_cpu: bool = True,
) -> list[Case]:
    """The configurations of ``profiles``: torch workers {0, 1, 2}, DALI CPU threads {1, 2} (accv: 2,
    unless ``accv_full``), the GPU, the ``variants``; ``workers`` / ``threads`` replace the counts."""
    cases = []
    for profile in profiles:
        full = profile in ("r50", "eval") or accv_full
        counts = threads or ((1, 2) if full else (2,))
        cases += [Case(profile, "torch", workers=w) for w in workers or ((0, 1, 2) if full else (2,))]
        cases += [Case(profile, "dali", threads=t) for t in counts] if dali_cpu else []
        if variants:
            pairs = R50_VARIANTS if profile == "r50" else tuple(("fast", t) for t in counts)
            cases += [Case(profile, "dali", threads=t, variant=v) for v, t in pairs]
        for t in (threads or (2,)) if gpu else ():
            cases.append(Case(profile, "dali", threads=t, device="gpu"))
            if variants:
                cases.append(Case(profile, "dali", threads=t, device="gpu", variant="fast"))
    return cases


def parse_override(text: str) -> tuple[str, Any]:
    """A DALI loader override ``KEY=VALUE`` (the value read as JSON where it is JSON)."""
    key, _, value = text.partition("=")
    try:
        return key, json.loads(value.lower() if value in ("True", "False") else value)
    except json.JSONDecodeError:
        return key, value


def default_data_root() -> Path:
    """The synthetic data set, made if missing."""
    from synthdata import ensure_dataset

    return ensure_dataset()


def enter_checkout() -> None:
    """Make ``projects.mmdet3d_plugin`` importable and resolve the configs' relative ``_base_``."""
    from overlaytool import require_code_root

    tree = require_code_root("loaderbench")
    for path in (str(tree), str(ROOT / "overlay")):
        if path in sys.path:
            sys.path.remove(path)
    sys.path[:0] = [str(ROOT / "overlay"), str(tree)]  # our loader first, then the checkout
    os.chdir(tree)


def eval_infos(data_root: Path) -> Path:
    """The eval profile's info file (made once, under ``out/bench-eval/``): ``data_root``'s train
    infos ``EVAL_COPIES`` times over (:func:`..nuscenes_size.replica.replicate_infos`)."""
    import pickle

    from ..nuscenes_size.replica import replicate_infos

    src = data_root / "nuscenes2d_temporal_infos_train.pkl"
    frames = EVAL_COPIES * len(pickle.loads(src.read_bytes())["infos"])
    return replicate_infos(src, ROOT / "out" / "bench-eval" / f"eval_infos_x{EVAL_COPIES}.pkl", frames)


def load_config(profile: str, data_root: Path) -> Any:
    """The mmcv Config of ``profile`` with the train set (eval: the test set) pointed at ``data_root``."""
    from mmcv import Config
    from overlaytool import require_code_root

    cfg = Config.fromfile(
        str(require_code_root("loaderbench") / (KEY8_CONFIG if profile == "8key" else R50_CONFIG))
    )
    cfg.data.train.data_root = f"{data_root}/"
    cfg.data.train.ann_file = str(data_root / "nuscenes2d_temporal_infos_train.pkl")
    if profile == "eval":  # as tools/test.py leaves data.test
        cfg.data.test.data_root = f"{data_root}/"
        cfg.data.test.ann_file = str(eval_infos(data_root))
        cfg.data.test.test_mode = True
        cfg.data.samples_per_gpu = 1
    elif profile == "accv":
        cfg.ida_aug_conf.update(ACCV_IDA)
        for step in cfg.data.train.pipeline:
            if step["type"] == "ResizeCropFlipRotImage":
                step["data_aug_conf"] = cfg.ida_aug_conf
        cfg.data.samples_per_gpu = ACCV_BATCH
        cfg.data.train.seq_split_num = ACCV_SEQ_SPLIT
        cfg.data_loading_config = {"replicate_dataset_per_gpu": True}
    elif profile not in ("r50", "8key"):
        raise ValueError(f"unknown profile {profile!r} (r50, accv, 8key, eval)")
    return cfg


def build_torch(cfg: Any, workers: int) -> Any:
    """The original loader: the config's CustomNuScenesDataset + StreamPETR's build_dataloader."""
    import projects.mmdet3d_plugin  # noqa: F401  (registers the plugin's datasets and transforms)
    from mmdet3d.datasets import build_dataset
    from projects.mmdet3d_plugin.datasets.builder import build_dataloader

    dataset = build_dataset(cfg.data.train)
    return build_dataloader(
        dataset,
        cfg.data.samples_per_gpu,
        workers,
        dist=False,
        seed=0,
        shuffler_sampler=cfg.data.shuffler_sampler,
        nonshuffler_sampler=cfg.data.nonshuffler_sampler,
        runner_type=cfg.runner,
    )


class Endless:
    """A test loader's passes one after the other (``tools/test.py`` makes one pass; the benchmark's
    timed ``next()`` calls must not meet its end): ``iter`` once, then a new pass where one ends."""

    def __init__(self, loader: Any) -> None:
        self.loader, self._it = loader, None

    def __iter__(self) -> Endless:
        return self

    def __next__(self) -> Any:
        if self._it is None:
            self._it = iter(self.loader)
        try:
            return next(self._it)
        except StopIteration:
            self._it = iter(self.loader)
            return next(self._it)

    def close(self) -> None:
        close = getattr(self.loader, "close", None)
        if close is not None:
            close()


def build(case: Case, cfg: Any, data_root: Path, rank: int = 0, world_size: int = 1, **overrides: Any) -> Any:
    """The loader of ``case`` from the (profile's) config ``cfg``, DALI's as rank ``rank`` of ``world_size``.
    The eval profile: upstream's test DataLoader as ``tools/test.py`` builds it in one process (the
    frames in order), or the DALI test loader in the collated form ``tools/test.py`` hands the model."""
    place = {"rank": rank, "world_size": world_size, "num_threads": case.threads, "device": case.device}
    if case.profile != "eval" and case.loader == "torch":
        return build_torch(cfg, case.workers)
    if case.profile != "eval":
        from dali_streampetr import build_dali_loader

        files = {"data_root": data_root, "ann_file": cfg.data.train.ann_file}
        return build_dali_loader(cfg, **files, seed=0, **place, **overrides)
    if case.loader == "torch":
        import projects.mmdet3d_plugin  # noqa: F401
        from mmdet3d.datasets import build_dataset
        from projects.mmdet3d_plugin.datasets.builder import build_dataloader

        dataset = build_dataset(cfg.data.test)
        return Endless(build_dataloader(dataset, 1, case.workers, dist=False, shuffle=False,
                                        nonshuffler_sampler=cfg.data.nonshuffler_sampler))  # fmt: skip
    from dali_streampetr import build_loader, to_eval_collated

    device_id = 0 if case.device == "gpu" else None
    return Endless(
        build_loader(cfg, split="test", device_id=device_id, collate=to_eval_collated, **place, **overrides)
    )
