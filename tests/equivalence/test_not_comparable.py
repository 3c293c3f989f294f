"""A config's exception as a row (`equivalence.not_comparable`): the frame that raised it, below a
same-type re-raise such as mmcv's registry's, and what would fit for the two known causes."""

from __future__ import annotations

import importlib
import pickle
import sys
from pathlib import Path

import pytest
from equivalence.not_comparable import not_comparable, train_scenes_needed

SAMPLER = """\
class Sampler:
    \"\"\"Upstream's sequence sampler's check, as it stands in group_sampler.py.\"\"\"

    def __init__(self, dataset, samples_per_gpu, num_replicas):
        self.dataset, self.batch_size, self.num_replicas = dataset, samples_per_gpu, num_replicas
        self.groups_num = len(set(dataset.flag))
        self.global_batch_size = samples_per_gpu * num_replicas
        assert self.groups_num >= self.global_batch_size


def build(dataset, samples_per_gpu, num_replicas):
    \"\"\"mmcv's registry: the class's exception re-raised as the same type, named after the class.\"\"\"
    try:
        return Sampler(dataset, samples_per_gpu, num_replicas)
    except Exception as e:
        raise type(e)(f"InfiniteGroupEachSampleInBatchSampler: {e}")
"""


class Dataset:
    def __init__(self, scenes: int, groups_per_scene: int) -> None:
        self.data_infos = [{"scene_token": f"s{i}"} for i in range(scenes) for _ in range(4)]
        self.flag = [i * groups_per_scene + j for i in range(scenes) for j in range(groups_per_scene)]


@pytest.fixture
def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The sampler and mmcv's registry call, in a module of their own (pytest rewrites the asserts
    of test modules only, so this one fails with upstream's bare message)."""
    (tmp_path / "group_sampler.py").write_text(SAMPLER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "group_sampler", raising=False)
    return importlib.import_module("group_sampler").build


def raised(call, *args) -> BaseException:
    try:
        call(*args)
    except Exception as exc:  # noqa: BLE001
        return exc
    raise AssertionError("did not raise")


def test_too_few_sequence_groups_names_the_data_set_that_fits(build) -> None:
    entry = not_comparable(raised(build, Dataset(scenes=2, groups_per_scene=2), 16, 1))
    assert entry["type"] == "AssertionError"
    assert entry["message"] == (
        "InfiniteGroupEachSampleInBatchSampler: assert self.groups_num >= self.global_batch_size"
    )
    assert entry["where"] == "group_sampler.py:8"
    assert entry["hint"] == (
        "upstream's sequence sampler needs a sequence group per batch slot: 16 (16 samples per GPU x 1 "
        "rank(s)), the data set has 4 (2 scenes, 2 groups each); 8 train scenes fit: `nox -s make_data -- "
        "--scenes 10`, then `nox -s equivalence -- ... --data-root <the folder it prints>`"
    )
    beyond = not_comparable(raised(build, Dataset(scenes=2, groups_per_scene=2), 16, 2))["hint"]
    assert beyond.endswith("16 train scenes would fit, more than the synthetic set holds: use `--data-root`")


def test_make_data_scenes_count_the_interleaved_val_scenes() -> None:
    assert [train_scenes_needed(n) for n in (1, 2, 3, 4, 8, 9)] == [1, 3, 4, 5, 10, None]


def test_a_key_the_infos_lack_is_named_and_one_they_have_is_not(tmp_path: Path) -> None:
    infos = {"infos": [{"token": "t0", "gt_boxes": []}], "metadata": {}}
    (tmp_path / "nuscenes2d_temporal_infos_train.pkl").write_bytes(pickle.dumps(infos))

    def read(info: dict, key: str) -> object:
        return info[key]

    entry = not_comparable(raised(read, infos["infos"][0], "instance_inds"), tmp_path)
    assert (entry["type"], entry["message"]) == ("KeyError", "'instance_inds'")
    assert "have no key 'instance_inds'" in entry["hint"] and "--add-info-key instance_inds" in entry["hint"]
    assert not_comparable(raised(read, {}, "gt_boxes"), tmp_path)["hint"] is None  # the infos have it


def test_a_base_built_from_an_installed_package_names_the_missing_configs_folder() -> None:
    """A fork's `_base_` from `mmdet3d.__file__` points into site-packages, where the wheel has no
    configs/ (mmcv's message quotes the path)."""

    def check_file_exist(filename: str) -> None:
        raise FileNotFoundError(f'file "{filename}" does not exist')

    missing = "/env/lib/python3.11/site-packages/configs/_base_/datasets/nus-3d.py"
    entry = not_comparable(raised(check_file_exist, missing))
    assert entry["type"] == "FileNotFoundError" and missing in entry["message"]
    assert "installed wheel has no configs/ folder" in entry["hint"]
    assert "mmdetection3d/configs/" in entry["hint"]


def test_a_data_file_the_set_lacks_is_named_with_what_provides_it(tmp_path: Path) -> None:
    """The fork's data set reads the nuScenes map expansion, which the synthetic set lacks."""

    def read_map(root: Path) -> bytes:
        return (root / "maps" / "expansion" / "singapore-onenorth.json").read_bytes()

    entry = not_comparable(raised(read_map, tmp_path), tmp_path)
    assert "has no maps/expansion/singapore-onenorth.json" in entry["hint"]
    assert "nuScenes map expansion" in entry["hint"] and "--data-root" in entry["hint"]
    outside = not_comparable(raised(read_map, tmp_path / "elsewhere"), tmp_path / "data")
    assert outside["hint"] is None  # a file outside the data root is no data file


def test_a_data_file_missing_in_the_add_info_key_copy_is_named_where_to_add_it(tmp_path: Path) -> None:
    """N5 (issue 60), sean-wade/StreamPETR_vectornet's shape: `--add-info-key` compares on a copy
    under `--out` whose folders link to the original data root; the map expansion is missing."""
    original, copy = tmp_path / "data", tmp_path / "out" / "data-with-instance_inds"
    (original / "maps").mkdir(parents=True)
    copy.mkdir(parents=True)
    (copy / "maps").symlink_to(original / "maps")

    def read_map(root: Path) -> bytes:
        return (root / "maps" / "expansion" / "singapore-onenorth.json").read_bytes()

    entry = not_comparable(raised(read_map, copy), copy)
    assert entry["hint"] is not None and "has no maps/expansion/singapore-onenorth.json" in entry["hint"]
    assert f"({copy}, the --add-info-key copy of {original}: add it there)" in entry["hint"]
    assert "nuScenes map expansion" in entry["hint"]
