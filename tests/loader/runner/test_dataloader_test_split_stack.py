"""Stack tier: what the patched ``tools/test.py`` and evaluation hook get from
``build_dali_loader`` of a test split: a ``DataLoader`` that mmcv's evaluation hooks accept, over upstream's
test dataset, its images served black under ``on_bad_image='skip'`` listed by sample, camera and
path, a rank that does not evaluate given the frame count instead, and a config value it does not
reproduce refused before any frame is read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.upstream, pytest.mark.stack]


@pytest.fixture(scope="module")
def damaged(synthetic_dataset: Path, tmp_path_factory) -> tuple[Path, str, str]:
    """The synthetic set, every image a link to the original, but one val camera image replaced by
    garbage; the val infos' (absolute) image paths moved to the copy. (root, token, camera)."""
    import os
    import pickle

    root = tmp_path_factory.mktemp("damaged_val")
    for entry in synthetic_dataset.iterdir():
        if entry.is_dir():
            shutil.copytree(entry, root / entry.name, copy_function=os.symlink)
    data = pickle.loads((synthetic_dataset / "nuscenes2d_temporal_infos_val.pkl").read_bytes())
    for info in data["infos"]:
        for cam in info["cams"].values():
            cam["data_path"] = cam["data_path"].replace(str(synthetic_dataset), str(root))
    (root / "nuscenes2d_temporal_infos_val.pkl").write_bytes(pickle.dumps(data))
    first = min(data["infos"], key=lambda i: i["timestamp"])
    name, cam = next(iter(first["cams"].items()))
    Path(cam["data_path"]).unlink()
    Path(cam["data_path"]).write_bytes(b"not a jpeg")
    return root, first["token"], name


def test_the_test_loader_is_a_dataloader_the_hooks_take_and_lists_skipped_images(damaged) -> None:
    from dali_streampetr import build_dali_loader
    from equivalence.eval_split import load_test_config
    from equivalence.original import import_upstream
    from mmdet.core import EvalHook
    from mmdet3d.datasets import build_dataset
    from torch.utils.data import DataLoader

    import_upstream()
    root, token, camera = damaged
    cfg = load_test_config("r50", root)
    cfg.data_loading_config = {"on_bad_image": "skip", "py_num_workers": 0}
    dataset = build_dataset(cfg.data.test)
    loader = build_dali_loader(cfg, "test", dataset)
    assert isinstance(loader, DataLoader) and loader.dataset is dataset and len(loader) == len(dataset)
    EvalHook(loader, interval=1)  # mmcv's hook refuses anything but a DataLoader
    batches = list(loader)
    assert len(batches) == len(dataset)
    skipped = loader.skipped_images()
    assert [(t, c) for t, c, _ in skipped] == [(token, camera)] and skipped[0][2].startswith(str(root))
    assert list(loader) and len(loader.skipped_images()) == 1  # listed per pass


def test_a_value_the_test_loader_does_not_reproduce_is_refused_before_reading(
    synthetic_dataset: Path,
) -> None:
    from dali_streampetr import build_dali_loader
    from dali_streampetr.settings import UnsupportedConfigError
    from equivalence.eval_split import load_test_config
    from equivalence.original import import_upstream

    import_upstream()
    cfg = load_test_config("r50", synthetic_dataset)
    cfg.data.test.pipeline[4]["flip"] = True
    with pytest.raises(
        UnsupportedConfigError, match=r"MultiScaleFlipAug3D.flip=True .*use_dali_test_pipeline=False"
    ):
        build_dali_loader(cfg, "test", dataset=None)


def test_a_rank_that_does_not_evaluate_counts_the_frame_store_instead_of_upstreams_dataset(
    synthetic_dataset: Path,
) -> None:
    """tools/test.py builds upstream's dataset on rank 0 only; another rank passes None and gets the
    frame store's count and the classes: the same length, no evaluate."""
    from dali_streampetr import build_dali_loader
    from equivalence.eval_split import load_test_config
    from equivalence.original import import_upstream
    from mmdet3d.datasets import build_dataset

    import_upstream()
    cfg = load_test_config("r50", synthetic_dataset)
    cfg.data_loading_config = {"py_num_workers": 0}
    loader = build_dali_loader(cfg, "test", None)
    try:
        upstream = build_dataset(cfg.data.test)
        assert (
            len(loader.dataset) == len(upstream) == len(loader) and loader.dataset.CLASSES == upstream.CLASSES
        )
        with pytest.raises(RuntimeError, match="only rank 0 evaluates"):
            loader.dataset.evaluate([])
    finally:
        loader.close()
