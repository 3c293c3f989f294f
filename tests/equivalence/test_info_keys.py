"""`--add-info-key`: a copy of the data set whose infos carry a key a fork reads, computed from the
data set's own nuScenes tables; an unknown key and tables that do not fit the infos are refused
by name, and the data set itself is never written."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest
from equivalence.info_keys import InfoKeyError, with_info_keys

TRAIN = "nuscenes2d_temporal_infos_train.pkl"


def test_instance_inds_follow_the_instances_of_each_box(synthetic_dataset: Path, tmp_path: Path) -> None:
    before = (synthetic_dataset / TRAIN).read_bytes()
    copy = with_info_keys(synthetic_dataset, ["instance_inds"], tmp_path)
    assert (synthetic_dataset / TRAIN).read_bytes() == before
    tables = next(synthetic_dataset.glob("v1.0-*"))
    instances = [r["token"] for r in json.loads((tables / "instance.json").read_text())]
    anns = json.loads((tables / "sample_annotation.json").read_text())
    for info in pickle.loads((copy / TRAIN).read_bytes())["infos"]:
        tokens = [a["instance_token"] for a in anns if a["sample_token"] == info["token"]]
        assert [instances[i] for i in info["instance_inds"]] == tokens
    assert (copy / "samples").resolve() == (synthetic_dataset / "samples").resolve()  # linked, not copied


def test_an_unknown_key_and_tables_that_do_not_fit_are_refused(
    synthetic_dataset: Path, tmp_path: Path
) -> None:
    with pytest.raises(InfoKeyError, match="--add-info-key gt_tracks: not a key this tool computes"):
        with_info_keys(synthetic_dataset, ["gt_tracks"], tmp_path)
    damaged = tmp_path / "damaged"
    shutil.copytree(synthetic_dataset, damaged, ignore=shutil.ignore_patterns("samples"))
    tables = next(damaged.glob("v1.0-*"))
    anns = json.loads((tables / "sample_annotation.json").read_text())
    (tables / "sample_annotation.json").write_text(json.dumps(anns[1:]))  # one annotation lost
    with pytest.raises(InfoKeyError, match="annotations in v1.0-mini, .* boxes in its info"):
        with_info_keys(damaged, ["instance_inds"], tmp_path / "out")
