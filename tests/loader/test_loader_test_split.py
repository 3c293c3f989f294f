"""The test loader (``split='test'``/``'val'``): upstream's test order and sharding (the plugin's
``DistributedSampler`` without shuffling, ``collect_results_cpu``'s gathering) on a set whose size is
no multiple of the world size, the scene resets, the deterministic test resize and crop, one pass per
``iter()``, faults, and every test-config value it does not reproduce refused by name. The collated
batch against upstream's own DataLoader is tests/equivalence/test_eval_split_stack.py."""

from __future__ import annotations

import copy
import math
import os
import signal

import numpy as np
import pytest
import torch
from dali_streampetr.config.reader import loader_config_from
from dali_streampetr.loader import build_loader
from dali_streampetr.pipeline.pipeline_errors import BadImageError, WorkerDiedError
from dali_streampetr.sampling.eval_shards import upstream_chunks
from dali_streampetr.settings import TEST, UnsupportedConfigError
from float_tolerance import float_atol
from loader_data import H, W, tiny_eval_config, write_eval_infos

MEAN = np.array([123.675, 116.28, 103.53])
STD = np.array([58.395, 57.12, 57.375])


@pytest.fixture(scope="module")
def eval_root(tiny_root):
    write_eval_infos(tiny_root)  # 11 frames: no multiple of 2 or 3
    return tiny_root


def one_pass(root, rank: int, world_size: int, **dlc) -> list[dict]:
    with build_loader(
        tiny_eval_config(**dlc), root, rank=rank, world_size=world_size, split="test"
    ) as loader:
        return list(loader)


def test_without_a_data_root_the_files_are_the_configs(eval_root, tmp_path):
    """No ``data_root``: the info file ``data.test.ann_file`` as given, the images under
    ``data.test.data_root`` (as ``tools/test.py`` finds them)."""
    cfg = tiny_eval_config(ann_file=str(eval_root / "nuscenes2d_temporal_infos_val.pkl"))
    cfg["data"]["test"]["data_root"] = str(eval_root)
    with build_loader(cfg, split="test") as loader:
        assert len(loader.frames) == 11
        assert next(loader)["img"].shape[0] == 1
    cfg["data"]["test"]["ann_file"] = str(tmp_path / "elsewhere.pkl")
    with pytest.raises(FileNotFoundError, match="elsewhere.pkl"):
        build_loader(cfg, split="test")


def gathered(parts: list[list[int]], size: int) -> list[int]:
    """``collect_results_cpu``: the parts concatenated in rank order, cut to the data set's size."""
    return [i for part in parts for i in part][:size]


def chunk_problems(parts: list[list[int]], size: int) -> list[str]:
    """Where per-rank index lists differ from upstream's test sampler, written from its definition:
    ``m = ceil(size / W)`` per rank, rank ``r`` walks positions ``r*m .. r*m + m - 1`` of the index
    list repeated around the end, and the gathered result is every frame once, in order."""
    world, problems = len(parts), []
    m = math.ceil(size / world)
    for rank, part in enumerate(parts):
        want = [(rank * m + k) % size for k in range(m)]
        if part != want:
            problems.append(f"rank {rank}: {part}, upstream {want}")
    if gathered(parts, size) != list(range(size)):
        problems.append(f"gathered {gathered(parts, size)} is not every frame once in order")
    return problems


def test_the_chunk_check_catches_a_shifted_or_interleaved_order():
    """The check below is able to fail: torch's default interleaved split, a chunk order shifted by
    one, and ranks swapped are all named; upstream's own split passes."""
    size, world = 11, 3
    assert chunk_problems(upstream_chunks(size, world), size) == []
    interleaved = [[(r + world * k) % size for k in range(4)] for r in range(world)]
    shifted = [[(i + 1) % size for i in chunk] for chunk in upstream_chunks(size, world)]
    swapped = [upstream_chunks(size, world)[r] for r in (1, 0, 2)]
    for wrong in (interleaved, shifted, swapped):
        assert chunk_problems(wrong, size)


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_each_rank_walks_upstreams_contiguous_chunk_and_the_gather_is_every_frame_once(eval_root, world_size):
    """11 frames on 1, 2 and 3 ranks: each rank's batches are its contiguous chunk of the index list
    wrapped to a multiple of the world size, one frame per batch, ``len`` = the chunk's length; the
    gathered parts cut to 11 are every frame once, in the data set's (timestamp) order."""
    parts, tokens = [], []
    for rank in range(world_size):
        batches = one_pass(eval_root, rank, world_size)
        assert all(len(b["dali"]) == 1 and b["img"].shape[:3] == (1, 1, 6) for b in batches)
        parts.append([b["dali"][0]["index"] for b in batches])
        tokens.append([b["dali"][0]["token"] for b in batches])
    size = 11
    assert chunk_problems(parts, size) == []
    with build_loader(tiny_eval_config(), eval_root, split="test") as loader:
        order = [loader.frames[i].token for i in range(size)]
        assert len(loader) == size
    stamps = [int(t[1:].split("f")[0]) * 10 + int(t.split("f")[1]) for t in order]
    assert stamps == sorted(stamps)  # the dataset's timestamp order
    assert [t for part in tokens for t in part][:size] == order


def test_scene_tokens_change_exactly_where_the_scene_changes(eval_root):
    """The model resets its memory where ``scene_token`` differs from the previous frame's: in a
    rank's stream that is exactly at the first frame of each scene (and where the chunk starts)."""
    batches = one_pass(eval_root, 0, 1)
    scenes = [b["img_metas"][0][0]["scene_token"] for b in batches]
    assert scenes == ["scene0"] * 4 + ["scene1"] * 4 + ["scene2"] * 3
    resets = [i for i in range(len(scenes)) if i == 0 or scenes[i] != scenes[i - 1]]
    assert resets == [0, 4, 8]
    second = one_pass(eval_root, 1, 2)  # rank 1 of 2 starts mid-scene: frames 6..10, then 0
    assert [b["dali"][0]["index"] for b in second] == [6, 7, 8, 9, 10, 0]
    assert [b["img_metas"][0][0]["scene_token"] for b in second][-2:] == ["scene2", "scene0"]


def test_the_test_resize_and_crop_are_upstreams_deterministic_ones(eval_root):
    """``ResizeCropFlipRotImage(training=False)``: resize ``max(fH/H, fW/W)`` = 176/400 = 0.44 (not
    ``resize_lim``), 176x99, the bottom 64 rows, no flip; the intrinsics are scaled by it and shifted
    by the crop, ``lidar2img = intrinsics @ extrinsics``; the poses are the frame's (no BEV
    augmentation); every frame gets the same draw; the images are those of the pass's second run."""
    batches = one_pass(eval_root, 0, 1)
    with build_loader(tiny_eval_config(), eval_root, split="test") as loader:
        frames = loader.frames
        again = list(loader), list(loader)
    resize = max(64 / H, 176 / W)
    assert resize == 0.44
    for b in batches:
        draw = b["dali"][0]["draw"]
        assert (draw.resize, draw.resize_dims, draw.crop, draw.flip) == (
            resize,
            (176, 99),
            (0, 35, 176, 99),
            False,
        )
        assert (draw.rot_angle, draw.scale_ratio, draw.translation) == (0.0, 1.0, (0.0, 0.0, 0.0))
        frame = frames[b["dali"][0]["index"]]
        k = np.array(frame.intrinsics, dtype=np.float64)
        ida = np.array(
            [[np.float32(resize), 0, 0], [0, np.float32(resize), -35], [0, 0, 1]], dtype=np.float64
        )
        k[:, :3, :3] = ida @ k[:, :3, :3]
        assert np.array_equal(b["intrinsics"][0, 0].numpy(), k.astype(np.float32))
        ext = np.asarray(frame.extrinsics, dtype=np.float64)
        l2i = np.stack([k[v] @ ext[v] for v in range(6)]).astype(np.float32)
        assert np.array_equal(b["lidar2img"][0, 0].numpy(), l2i)
        assert np.array_equal(b["ego_pose"][0, 0].numpy(), np.asarray(frame.ego_pose, dtype=np.float32))
        assert b["img"].shape[-2:] == (64, 192)  # 176 padded to a multiple of 32 after normalising
        assert not b["img"][0, 0, :, :, :, 176:].any() and b["img"][0, 0, :, :, :, 175].all()
    for run in again:
        assert [b["dali"][0]["index"] for b in run] == [b["dali"][0]["index"] for b in batches]
        assert all(torch.equal(x["img"], y["img"]) for x, y in zip(run, batches, strict=True))


def test_a_pass_ends_like_a_dataloader_and_closes_its_workers(eval_root):
    """``len`` batches, then StopIteration; the workers are gone until the next ``iter()``, which
    walks the same chunk again."""
    with build_loader(
        tiny_eval_config(py_num_workers=1), eval_root, rank=1, world_size=3, split="val"
    ) as loader:
        assert loader.cfg.mode.name == TEST and len(loader) == 4
        it = iter(loader)
        got = [next(it)["dali"][0]["index"] for _ in range(4)]
        pids = loader.worker_pids()
        assert pids
        with pytest.raises(StopIteration):
            next(it)
        assert loader.worker_pids() == []
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        assert [b["dali"][0]["index"] for b in loader] == got == [4, 5, 6, 7]


def test_a_dead_worker_raises_by_name_and_the_retry_is_the_same_frame(eval_root):
    with build_loader(
        tiny_eval_config(py_num_workers=1, batch_timeout_s=20), eval_root, split="test"
    ) as loader:
        it = iter(loader)
        first = next(it)["dali"][0]["index"]
        (pid,) = loader.worker_pids()
        os.kill(pid, signal.SIGKILL)
        seen = [first]
        with pytest.raises(WorkerDiedError, match=f"pid {pid} killed by SIGKILL"):
            for _ in range(20):
                seen.append(next(it)["dali"][0]["index"])
        rest = [b["dali"][0]["index"] for b in it]
        assert seen + rest == list(range(11))  # rebuilt at the failed frame: none lost, none twice


def test_a_bad_image_raises_by_name_or_is_served_black_and_listed(eval_root, tmp_path):
    import shutil

    root = tmp_path / "data"
    shutil.copytree(eval_root, root)
    with build_loader(tiny_eval_config(), root, split="test") as loader:
        frame = loader.frames[5]
    path = frame.img_paths[2]
    with open(path, "wb") as f:
        f.write(b"not a jpeg")
    with pytest.raises(BadImageError, match=f"sample {frame.token}, camera {frame.cam_names[2]}"):
        one_pass(root, 0, 1)
    batches = one_pass(root, 0, 1, on_bad_image="skip")
    assert [b["dali"][0]["index"] for b in batches] == list(range(11))
    bad = [
        (b["dali"][0]["token"], b["dali"][0]["bad_cameras"]) for b in batches if b["dali"][0]["bad_cameras"]
    ]
    assert bad == [(frame.token, [frame.cam_names[2]])]
    black = torch.tensor(-MEAN / STD, dtype=torch.float32)[:, None, None].expand(3, 64, 176)
    # DALI normalises in float32: mean and 1/std rounded, a subtraction and a product, against the
    # float64 value rounded once; 8 roundings at the scale |mean/std| <= 2.2 leave room for an
    # implementation that folds mean and scale in another order (about 1e-6)
    atol = float_atol(np.float32, np.abs(MEAN / STD).max(), ops=8)
    assert torch.allclose(batches[5]["img"][0, 0, 2, :, :, :176], black, rtol=0, atol=atol)


def test_upstreams_test_config_is_read_and_the_train_keys_do_not_matter(eval_root):
    """The tiny config shaped like upstream's test entries is accepted for both splits; the train
    split's streaming keys and ``replicate_dataset_per_gpu`` do not change the test loader's split."""
    cfg = tiny_eval_config(replicate_dataset_per_gpu=True)
    for split in ("test", "val"):
        settings = loader_config_from(cfg, split)
        assert settings.mode.name == TEST and settings.samples_per_gpu == 1
        assert settings.ann_file == "nuscenes2d_temporal_infos_val.pkl"
    with build_loader(cfg, eval_root, rank=1, world_size=2, split="test") as loader:
        assert list(loader.sampler) == upstream_chunks(11, 2)[1] and not loader.sampler.replicate


def _set(cfg: dict, path: str, value) -> dict:
    """``cfg`` with the dotted ``path`` (list positions as numbers) set to ``value``; in both splits."""
    cfg = copy.deepcopy(cfg)
    for split in ("test", "val"):
        node = cfg["data"][split] if path.startswith("@") else cfg
        keys = path.lstrip("@").split(".")
        for key in keys[:-1]:
            node = node[int(key)] if key.isdigit() else node[key]
        last = keys[-1]
        node[int(last) if last.isdigit() else last] = value
        if not path.startswith("@"):
            break
    return cfg


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("@samples_per_gpu", 2, "data.test.samples_per_gpu=2"),
        ("@load_interval", 2, "data.test.load_interval=2"),
        ("@type", "NuScenesDataset", "data.test.type='NuScenesDataset'"),
        ("@test_mode", False, "data.test.test_mode=False"),
        ("@box_type_3d", "Camera", "data.test.box_type_3d='Camera'"),
        ("data.nonshuffler_sampler", {"type": "DistributedGroupSampler"},
         "data.nonshuffler_sampler.type='DistributedGroupSampler'"),
        ("@pipeline.1.training", True, "data.test.pipeline[1] ResizeCropFlipRotImage.training=True"),
        ("@pipeline.0.to_float32", False, "LoadMultiViewImageFromFiles.to_float32=False"),
        ("@pipeline.3.pad_val", 1, "data.test.pipeline[3] PadMultiViewImage.pad_val=1"),
        ("@pipeline.4.flip", True, "data.test.pipeline[4] MultiScaleFlipAug3D.flip=True"),
        ("@pipeline.4.img_scale", [(1333, 800), (1600, 900)], "MultiScaleFlipAug3D.img_scale="),
        ("@pipeline.4.pts_scale_ratio", 2, "MultiScaleFlipAug3D.pts_scale_ratio=2"),
        ("@pipeline.4.transforms.0.with_label", True, "PETRFormatBundle3D.with_label=True"),
        ("@pipeline.4.transforms.1.meta_keys", ("filename", "scene_token"), "Collect3D.meta_keys="),
        ("@pipeline.4.transforms.1.keys", ["img", "lidar2img"], "Collect3D.keys="),
        ("@pipeline.2.type", "PhotoMetricDistortionMultiViewImage", "data.test.pipeline[2].type="),
    ],
)  # fmt: skip
def test_every_test_value_the_loader_does_not_reproduce_is_refused_by_name(path, value, named):
    cfg = _set(tiny_eval_config(), path, value)
    with pytest.raises(UnsupportedConfigError, match="supported: ") as err:
        loader_config_from(cfg, "test")
    assert named in str(err.value), str(err.value)
    assert "use_dali_test_pipeline=False to evaluate" in str(err.value)


def test_a_list_of_test_sets_is_refused_by_name():
    cfg = tiny_eval_config()
    cfg["data"]["test"] = [cfg["data"]["test"], cfg["data"]["test"]]
    with pytest.raises(UnsupportedConfigError, match=r"data.test='a list of 2 datasets'"):
        loader_config_from(cfg, "test")
