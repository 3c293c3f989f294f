"""Upstream + stack tier: the sweep over a tree holding each shape of config that broke it on real
forks gives one row per file with the right verdict, and still writes the table and the JSON.

The shapes, built here from the pin's own r50 config (never committed): a resize range that never
pads and ``rand_flip=False`` (draws that never vary: equal, not a statistics error), a batch of 16
on a small data set (upstream's sampler assert: which ``make_data`` fits), a fork's dataset reading
an info key the embedded infos lack (named; ``--add-info-key`` adds it), a missing ``_base_``, a
Python file that is no config and a base fragment without ``model`` (skipped by rule).
"""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.upstream, pytest.mark.stack]

FORK_DATASET = '''\
"""A fork's CustomNuScenesDataset as tracking forks edit it: the boxes' instance ids come from the
info, which the fork's own converter writes."""
import numpy as np
from mmdet.datasets import DATASETS
from projects.mmdet3d_plugin.datasets.nuscenes_dataset import CustomNuScenesDataset as Upstream


@DATASETS.register_module(name="CustomNuScenesDataset", force=True)
class ForkNuScenesDataset(Upstream):
    def get_ann_info(self, index):
        info = self.data_infos[index]
        mask = info["valid_flag"] if self.use_valid_flag else info["num_lidar_pts"] > 0
        instance_inds = np.array(info["instance_inds"], dtype=np.int64)[mask]
        results = super().get_ann_info(index)
        results["instance_inds"] = instance_inds
        return results
'''


MISSING = "../StreamPETR/stream_petr_r50_flash_704_bs2_seq_25e.py"  # a fork renamed its 24e config


def edited(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old  # the pin's config still has the line the shape edits
    return text.replace(old, new)


@pytest.fixture
def fork_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A fork's `projects/configs` beside the nested mmdetection3d checkout; name -> config file."""
    from equivalence.original import CHECKOUT, CONFIGS, upstream_root
    from mmdet.datasets import DATASETS

    root = tmp_path / "fork"
    configs = root / "projects" / "configs"
    (configs / "fork").mkdir(parents=True)
    (configs / "_base_").mkdir()
    (root / "mmdetection3d").symlink_to(CHECKOUT / "mmdetection3d")  # where the configs' _base_ lead
    r50 = (upstream_root() / CONFIGS["r50"]).read_text()
    files = {
        "never_pads": edited(r50, '"resize_lim": (0.38, 0.55)', '"resize_lim": (0.47, 0.55)'),
        "no_flip": edited(r50, '"rand_flip": True', '"rand_flip": False'),
        "bs16": edited(r50, "batch_size = 2\n", "batch_size = 16\n"),
        "missing_base": f"_base_ = ['{MISSING}']\nbatch_size = 4\n",
        "lr_table": "import glob\n\nfor path in sorted(glob.glob('*/*.py')):\n    print(path)\n",
        "zz_instance_inds": r50
        + "\ncustom_imports = dict(imports=['fork_dataset'], allow_failed_imports=False)\n",
    }
    paths = {name: configs / "fork" / f"{name}.py" for name in files}
    for name, text in files.items():
        paths[name].write_text(text)
    paths["fragment"] = configs / "_base_" / "fragment.py"
    paths["fragment"].write_text("data = dict(samples_per_gpu=2, workers_per_gpu=4)\n")
    (root / "fork_dataset.py").write_text(FORK_DATASET)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, "fork_dataset", raising=False)  # each test's config registers it anew
    upstream_class = DATASETS.get("CustomNuScenesDataset")
    yield paths
    DATASETS.register_module(name="CustomNuScenesDataset", force=True, module=upstream_class)
    sys.modules.pop("fork_dataset", None)


@pytest.fixture(scope="module")
def upstream() -> None:
    from equivalence.original import import_upstream

    import_upstream()


def sweep_of(configs: list[Path], data_root: Path, out: Path) -> list[dict]:
    from equivalence.harness import run_config
    from equivalence.original import read_config
    from equivalence.sweep import sweep
    from equivalence.verdict import render

    compare = functools.partial(
        run_config, data_root=data_root, batches=1, sequence_iters=4, draws=400, log=lambda _: None
    )
    return sweep(
        [str(c) for c in configs], compare, read_config, split="train", data_root=data_root, out=out,
        render=render,
    )  # fmt: skip


def test_every_shape_gets_its_row_and_the_run_writes_table_and_json(
    upstream, fork_tree: dict[str, Path], synthetic_dataset: Path, tmp_path: Path, capsys
) -> None:
    from equivalence.verdict import config_table, verdict_counts

    order = ["lr_table", "missing_base", "fragment", "never_pads", "no_flip", "bs16", "zz_instance_inds"]
    out = tmp_path / "out" / "equivalence.json"
    records = sweep_of([fork_tree[n] for n in order], synthetic_dataset, out)
    rows = dict(zip(order, records, strict=True))

    assert "not a config" in rows["lr_table"]["skipped"]
    assert (
        "its `_base_` '../StreamPETR/stream_petr_r50_flash_704_bs2_seq_25e.py' does not exist"
        in (rows["missing_base"]["skipped"])
    )
    assert "no `model` once loaded" in rows["fragment"]["skipped"]
    for name in ("never_pads", "no_flip"):  # draws that never vary on either side are equal
        assert rows[name]["ok"] and not {"not_comparable", "refused"} & rows[name].keys(), name
    assert rows["never_pads"]["draws"]["pad"]["test"] == "constant"
    assert rows["never_pads"]["draws"]["pad"]["counts"]["dali"] == [0, 400]
    flip = rows["no_flip"]["draws"]["flip"]
    assert (flip["test"], flip["values"], flip["ok"]) == ("constant", [False], True)

    bs16 = rows["bs16"]["not_comparable"]
    assert (bs16["type"], rows["bs16"]["ok"]) == ("AssertionError", False)
    assert re.fullmatch(r".*/projects/mmdet3d_plugin/datasets/samplers/group_sampler\.py:\d+", bs16["where"])
    assert (
        "needs a sequence group per batch slot: 16 (16 samples per GPU x 1 rank(s)), the data set has 4"
        in (bs16["hint"])
    )
    assert "8 train scenes fit: `nox -s make_data -- --scenes 10`" in bs16["hint"]

    keys = rows["zz_instance_inds"]["not_comparable"]
    assert (keys["type"], keys["message"]) == ("KeyError", "'instance_inds'")
    assert keys["where"] == "fork_dataset.py:13"
    assert "have no key 'instance_inds'" in keys["hint"] and "--add-info-key instance_inds" in keys["hint"]

    written = json.loads(out.read_text())
    assert [r["config"] for r in written["configs"]] == [str(fork_tree[n]) for n in order]
    assert written["ok"] is False
    table = config_table(records).splitlines()
    assert len(table) == 2 + len(order)
    assert (
        "| not comparable: AssertionError: InfiniteGroupEachSampleInBatchSampler: assert self.groups_num >= "
        f"self.global_batch_size ({bs16['where']}); upstream's sequence sampler" in table[7]
    )
    assert verdict_counts(records).startswith("2 of 4 configs equal, 2 not comparable (")
    assert verdict_counts(records).endswith("; 3 file(s) skipped by rule (" + ", ".join(
        str(fork_tree[n]) for n in order[:3]) + ")")  # fmt: skip


def test_an_added_info_key_makes_the_forks_dataset_comparable(
    upstream, fork_tree: dict[str, Path], synthetic_dataset: Path, tmp_path: Path
) -> None:
    import pickle

    from equivalence.info_keys import with_info_keys

    root = with_info_keys(synthetic_dataset, ["instance_inds"], tmp_path)
    infos = pickle.loads((root / "nuscenes2d_temporal_infos_train.pkl").read_bytes())["infos"]
    assert all(len(i["instance_inds"]) == len(i["gt_boxes"]) for i in infos)
    assert len({int(x) for i in infos for x in i["instance_inds"]}) > 1  # ids, not one constant
    assert (
        "instance_inds"
        not in pickle.loads((synthetic_dataset / "nuscenes2d_temporal_infos_train.pkl").read_bytes())[
            "infos"
        ][0]
    )  # the data set itself is untouched
    (record,) = sweep_of([fork_tree["zz_instance_inds"]], root, tmp_path / "out.json")
    assert record["ok"] and "not_comparable" not in record, record.get("not_comparable")
    from mmdet.datasets import DATASETS

    assert DATASETS.get("CustomNuScenesDataset").__name__ == "ForkNuScenesDataset"  # the fork's ran
