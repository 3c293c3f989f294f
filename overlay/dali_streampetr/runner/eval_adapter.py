"""The DALI test loader as upstream's test DataLoader: the collated test batch (the
``MultiScaleFlipAug3D`` list nesting, DataContainers, ``img_metas``) and a ``DataLoader`` that
``tools/test.py``, mmdet3d's ``single_gpu_test``, the plugin's ``custom_multi_gpu_test`` and the
evaluation hooks take as theirs. Imports mmcv/mmdet3d at module level, as :mod:`.mmdet_adapter`."""

from __future__ import annotations

from typing import Any

from mmcv.parallel import DataContainer, collate
from mmdet3d.core.bbox import Box3DMode, LiDARInstance3DBoxes
from torch.utils.data import DataLoader

from ..batch_schema import GEOMETRY_KEYS, TEST_META_KEYS
from ..loader import DaliStreamLoader


def eval_meta(batch: dict[str, Any], b: int = 0) -> dict[str, Any]:
    """Sample ``b``'s ``img_metas`` entry as ``Collect3D`` makes it in the test pipeline: the test
    configs' ``meta_keys`` in their order, with ``flip`` (``MultiScaleFlipAug3D`` sets it) and the box
    mode and type (the dataset's ``pre_pipeline``)."""
    meta = {
        **batch["img_metas"][b][0],
        "flip": False,
        "box_mode_3d": Box3DMode.LIDAR,
        "box_type_3d": LiDARInstance3DBoxes,
    }
    return {k: meta[k] for k in TEST_META_KEYS}


def eval_sample(batch: dict[str, Any], b: int = 0) -> dict[str, list[DataContainer]]:
    """Sample ``b`` of a plain test batch as upstream's test pipeline returns it: ``Collect3D``'s dict
    (``img_metas``, then ``img`` and the collect keys, in the test configs' order), each value a list
    of one DataContainer (``MultiScaleFlipAug3D`` with one scale and no flip), formatted as
    ``PETRFormatBundle3D`` does (``img`` stacked, the collect keys not)."""
    sample = {
        "img_metas": [DataContainer(eval_meta(batch, b), cpu_only=True)],
        "img": [DataContainer(batch["img"][b, 0], stack=True)],
    }
    for key in GEOMETRY_KEYS:
        sample[key] = [DataContainer(batch[key][b, 0])]
    return sample


def to_eval_collated(batch: dict[str, Any]) -> dict[str, list[DataContainer]]:
    """What upstream's test DataLoader yields: ``mmcv.parallel.collate`` of the batch's samples
    (:func:`eval_sample`) with ``samples_per_gpu`` = their number (1 in ``tools/test.py``), built
    directly: the images are DALI's batch tensor as it is, not stacked again (collate's copy would
    cost the evaluating thread a copy of every image). The equality with collate's own output is
    checked against upstream's DataLoader (tests/equivalence/test_eval_split_stack.py)."""
    n = len(batch["img_metas"])
    metas = [eval_meta(batch, b) for b in range(n)]
    out = {
        "img_metas": [DataContainer([metas], cpu_only=True)],
        "img": [DataContainer([batch["img"][:, 0]], stack=True, padding_value=0)],
    }
    for key in GEOMETRY_KEYS:
        out[key] = [DataContainer([[batch[key][b, 0] for b in range(n)]], stack=False, padding_value=0)]
    return out


def to_eval_collated_by_mmcv(batch: dict[str, Any]) -> dict[str, list[DataContainer]]:
    """The same through ``mmcv.parallel.collate`` of :func:`eval_sample` per sample (the reference)."""
    samples = [eval_sample(batch, b) for b in range(len(batch["img_metas"]))]
    return collate(samples, samples_per_gpu=len(samples))


class SkippedImages:
    """A collate step: notes every camera served black (``on_bad_image='skip'``) of a test batch,
    then hands the batch to ``then``. ``entries``: (sample token, camera, frame index) in test order."""

    def __init__(self, then: Any) -> None:
        self.then, self.entries = then, []

    def __call__(self, batch: dict[str, Any]) -> Any:
        for record in batch["dali"]:
            for frame in record["frames"]:
                for cam in frame["bad_cameras"]:
                    self.entries.append((frame["token"], cam, frame["index"]))
        return self.then(batch)


class FrameCount:
    """Upstream's test dataset as a rank that does not evaluate uses it: its length (the frames of the
    loader's frame store) and ``CLASSES``. ``tools/test.py`` builds upstream's dataset on rank 0 only,
    so the other ranks do not read the info file once more each; rank 0 alone evaluates."""

    def __init__(self, size: int, classes: list[str]) -> None:  # noqa: D107
        self.size, self.CLASSES = size, classes

    def __len__(self) -> int:
        return self.size

    def evaluate(self, *_: Any, **__: Any) -> Any:
        raise RuntimeError("only rank 0 evaluates: this rank holds the frame count, not upstream's dataset")

    format_results = evaluate


class DaliTestDataLoader(DataLoader):
    """The test loader where upstream passes its ``DataLoader``: ``dataset`` is upstream's test
    dataset (its length, ``evaluate`` and ``format_results``; it reads no image), or :class:`FrameCount`
    on a rank that does not evaluate; iteration is the DALI loader's pass over this rank's chunk. A
    ``DataLoader`` subclass because mmcv's ``EvalHook`` refuses anything else; ``DataLoader.__init__``
    is not run (no sampler, no workers of its own)."""

    def __init__(self, loader: DaliStreamLoader, dataset: Any, skipped: SkippedImages) -> None:  # noqa: D107
        self.loader, self.dataset, self._skipped = loader, dataset, skipped
        self.sampler = loader.sampler
        self.batch_size = loader.cfg.samples_per_gpu
        self.num_workers = 0

    def __iter__(self) -> Any:
        self._skipped.entries.clear()
        return iter(self.loader)

    def __len__(self) -> int:
        return len(self.loader)

    def skipped_images(self) -> list[tuple[str, str, str]]:
        """(sample token, camera, path) of every image of the last pass served black."""
        frames = self.loader.frames
        return [
            (token, cam, frames[index].img_paths[frames[index].cam_names.index(cam)])
            for token, cam, index in self._skipped.entries
        ]

    def close(self) -> None:
        self.loader.close()
