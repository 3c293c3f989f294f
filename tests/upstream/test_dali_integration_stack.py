"""Stack tier: the DALI integration patches in the real StreamPETR (train.py, mmdet_train.py, builder.py).

Runs inside the OpenMMLab env (`nox -s tests` does that when the upstream cache holds the pins).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter
from itertools import islice
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = REPO_ROOT / "upstream" / "StreamPETR"
BUILDER = "projects/mmdet3d_plugin/datasets/builder.py"
SMALL = "projects/configs/cpu/stream_petr_r50_cpu_smoke_352.py"
SMALL_DALI = "projects/configs/dali/stream_petr_r50_cpu_smoke_352_dali.py"
pytestmark = [pytest.mark.stack, pytest.mark.upstream]


@pytest.fixture(scope="module")
def builder():
    """The patched plugin's builder module (the plugin imported from the applied checkout)."""
    sys.path.insert(0, str(CHECKOUT))
    from projects.mmdet3d_plugin.datasets import builder

    return builder


@pytest.fixture(scope="module")
def original_builder(builder, tmp_path_factory: pytest.TempPathFactory):
    """Upstream's builder.py exactly as at the pin (from the checkout's git history), as a module."""
    pin = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=CHECKOUT, capture_output=True, text=True
    ).stdout.strip()
    source = subprocess.run(["git", "show", f"{pin}:{BUILDER}"], cwd=CHECKOUT, capture_output=True, text=True)
    assert "replicate_dataset_per_gpu" not in source.stdout
    path = tmp_path_factory.mktemp("upstream") / "original_builder.py"
    path.write_text(source.stdout)
    spec = importlib.util.spec_from_file_location("original_builder", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["original_builder"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cfg(synthetic_dataset: Path, builder):
    from mmcv import Config

    cfg = Config.fromfile(str(CHECKOUT / SMALL))
    cfg.data.train.data_root = f"{synthetic_dataset}/"
    cfg.data.train.ann_file = str(synthetic_dataset / "nuscenes2d_temporal_infos_train.pkl")
    return cfg


@pytest.fixture(scope="module")
def dataset(cfg):
    from mmdet3d.datasets import build_dataset

    return build_dataset(cfg.data.train)


def loader_args(cfg) -> dict:
    return dict(
        samples_per_gpu=2, workers_per_gpu=0, num_gpus=1, seed=3, shuffler_sampler=cfg.data.shuffler_sampler,
        nonshuffler_sampler=cfg.data.nonshuffler_sampler, runner_type=cfg.runner,
    )  # fmt: skip


def describe(loader) -> dict:
    sampler = loader.batch_sampler
    return {
        "sampler": type(sampler).__name__,
        "fields": (sampler.batch_size, sampler.num_replicas, sampler.rank, sampler.seed, sampler.groups_num),
        "batches": list(islice(iter(sampler), 25)),
        "loader": (loader.batch_size, loader.num_workers),
        "worker_seed": loader.worker_init_fn.keywords,
    }


@pytest.mark.parametrize("dist", [False, True])
def test_flag_off_builds_exactly_upstreams_loader(
    builder, original_builder, dataset, cfg, dist: bool
) -> None:
    ours = builder.build_dataloader(dataset, dist=dist, **loader_args(cfg))
    theirs = original_builder.build_dataloader(dataset, dist=dist, **loader_args(cfg))
    assert describe(ours) == describe(theirs)


def test_replicate_reaches_the_samplers_and_worker_seeds_keep_the_real_rank(
    builder, dataset, cfg, monkeypatch
) -> None:
    single = describe(builder.build_dataloader(dataset, **loader_args(cfg)))
    monkeypatch.setattr(builder, "get_dist_info", lambda: (1, 2))  # this process plays rank 1 of 2
    shard = describe(builder.build_dataloader(dataset, **loader_args(cfg)))
    assert shard["fields"][1:3] == (2, 1)
    assert shard["batches"] != single["batches"]

    replicate = describe(
        builder.build_dataloader(dataset, replicate_dataset_per_gpu=True, **loader_args(cfg))
    )
    assert replicate["fields"][1:3] == (1, 0)
    assert replicate["batches"] == single["batches"]  # the whole data set, in rank 0's order
    assert replicate["worker_seed"] == {"num_workers": 0, "rank": 1, "seed": 3}

    offset = builder.build_dataloader(
        dataset, replicate_dataset_per_gpu=True, offset_order_per_rank=True, **loader_args(cfg)
    )
    assert describe(offset)["fields"][3] == 3 + 1
    assert describe(offset)["batches"] != single["batches"]


def test_distributed_args(builder, monkeypatch) -> None:
    """From the settings the builder read: the device is not read from the config a second time."""
    from dali_streampetr import loader_config_from
    from dali_streampetr.runner.dataloader import distributed_args

    monkeypatch.setenv("LOCAL_RANK", "3")
    on_cpu = loader_config_from({"data_loading_config": {"device": "cpu"}})
    assert distributed_args(on_cpu) == {"rank": 0, "world_size": 1, "device_id": None}
    assert distributed_args(on_cpu, rank=2, world_size=3) == {"rank": 2, "world_size": 3, "device_id": None}
    assert distributed_args(loader_config_from({"data_loading_config": {"device": "gpu"}}))["device_id"] == 3


def slot_streams(work_dir: Path, rank: int) -> list[list[int]]:
    lines = (work_dir / f"slots_rank{rank}.jsonl").read_text().splitlines()
    return [[slot["index"] for slot in json.loads(line)["slots"]] for line in lines]


@pytest.mark.slow
def test_two_training_iterations_on_the_dali_loader(dali_first_run: tuple[Path, str]) -> None:
    """The session's 2-iteration DALI run (tests/upstream/conftest.py; test_long_runs_stack.py resumes
    a copy of it)."""
    work_dir, out = dali_first_run
    assert "train_dali: 2 iterations" in out and "all losses finite" in out
    assert "CLASSES = car, truck" in out
    assert len(slot_streams(work_dir, 0)) == 2


class ReadCounting(dict):
    """A config (as mmcv's ``Config`` reads: items and attributes) that counts the reads of its keys."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.reads: Counter[str] = Counter()

    def get(self, key: str, default: object = None) -> object:
        self.reads[key] += 1
        return super().get(key, default)

    def __getitem__(self, key: str) -> object:
        self.reads[key] += 1
        return super().__getitem__(key)

    def __getattr__(self, key: str) -> object:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


def test_the_dali_loader_reads_the_loader_settings_once(synthetic_dataset: Path, builder) -> None:
    """What tools/train.py builds reads ``data_loading_config`` once: the distributed arguments (the
    DALI device) come from the settings read, not from a second read of the config."""
    from dali_streampetr import build_dali_loader
    from mmcv import Config

    config = ReadCounting(Config.fromfile(str(CHECKOUT / SMALL_DALI))._cfg_dict.to_dict())
    infos = synthetic_dataset / "nuscenes2d_temporal_infos_train.pkl"
    config["data"]["train"].update(data_root=f"{synthetic_dataset}/", ann_file=str(infos))
    config["data_loading_config"].update(py_num_workers=0, log_slots=False)
    config.reads.clear()
    loader = build_dali_loader(config, "train")
    try:
        assert config.reads["data_loading_config"] == 1, config.reads
        assert (loader.loader.cfg.py_num_workers, loader.loader.cfg.log_slots) == (0, False)
    finally:
        loader.close()
