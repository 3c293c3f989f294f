"""GPU tier: the DALI loader on an NVIDIA GPU.

- nvJPEG ("mixed") decoding and the GPU resize give the CPU graph's images within the image
  tolerance (per image, in grey levels: mean abs diff <= 0.5, 99.9th percentile <= 4), and the
  same targets bit for bit (they are computed on the CPU in both);
- ``image_path="fast"`` maps to the GPU graph (linear resize, the pad in the normalisation): the
  GPU's fast images within the image tolerance of the CPU's fast images, the targets of the exact path;
- CPU decoding with a ``device_id`` hands the images over on that GPU, bit-identical to the CPU;
- the loader runs on the GPU of ``LOCAL_RANK`` (what the integration picks), its images written on
  the caller's current CUDA stream;
- the test loader (``split='test'``: one frame a batch, the deterministic test resize) with nvJPEG
  decoding against its CPU graph: the same frames in order, images within the tolerance, the
  geometry bit for bit;
- two StreamPETR training iterations with the DALI GPU settings (stack tier as well).

Run them with ``nox -s tests_gpu`` on a machine with a GPU; elsewhere each test skips with one line.
The tests not marked ``stack`` need no mmcv: the GPU check kit (``nox -s gpu_check``, docs/gpu.md)
runs them on a bare CUDA node with ``-m "gpu and not stack"``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from float_tolerance import float_atol

pytestmark = pytest.mark.gpu
REPO_ROOT = Path(__file__).resolve().parents[2]
MEAN_TOL, P999_TOL = 0.5, 4.0  # grey levels, per image: empirical, the image tolerance of docs/tolerances.md
STD = np.array([58.395, 57.12, 57.375], dtype=np.float32)  # LoaderConfig's default img_norm_cfg
BATCHES = 3


@pytest.fixture(scope="module")
def torch_cuda():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("gpu tier skipped: torch in this environment sees no CUDA device")
    return torch


def loader(root: Path, device: str, device_id: int | None, image_path: str = "exact"):
    from dali_streampetr.loader import DaliStreamLoader
    from dali_streampetr.sampling.modes import Streaming
    from dali_streampetr.settings import LoaderConfig

    cfg = LoaderConfig(
        device=device,
        samples_per_gpu=2,
        num_threads=2,
        py_num_workers=1,
        image_path=image_path,
        mode=Streaming(),
    )
    return DaliStreamLoader(cfg, root, seed=4, device_id=device_id)


@pytest.fixture(scope="module")
def cpu_batches(synthetic_dataset: Path, torch_cuda) -> list[dict]:
    with loader(synthetic_dataset, "cpu", None) as cpu:
        return [next(cpu) for _ in range(BATCHES)]


def grey_level_diff(a, b) -> tuple[float, float]:
    """Worst image's mean and 99.9th percentile of |a - b| in grey levels (normalised CHW inputs)."""
    diff = (a.double() - b.double()).abs().cpu().numpy().reshape(-1, 3, *a.shape[-2:])
    diff *= STD[None, :, None, None]
    per_image = diff.reshape(len(diff), -1)
    return float(per_image.mean(1).max()), float(np.percentile(per_image, 99.9, axis=1).max())


def assert_same_targets(batch: dict, ref: dict, torch) -> None:
    from dali_streampetr.batch_schema import GEOMETRY_KEYS

    for key in GEOMETRY_KEYS:
        assert torch.equal(batch[key], ref[key]), key
    for got, want in zip(batch["gt_bboxes_3d"], ref["gt_bboxes_3d"], strict=True):
        assert torch.equal(got[0], want[0])
    assert [d["index"] for d in batch["dali"]] == [d["index"] for d in ref["dali"]]


def test_mixed_decoding_matches_cpu_decoding(synthetic_dataset: Path, cpu_batches, torch_cuda) -> None:
    torch = torch_cuda
    with loader(synthetic_dataset, "gpu", 0) as gpu:
        for ref in cpu_batches:
            batch = next(gpu)
            assert batch["img"].device == torch.device("cuda", 0) and batch["img"].shape == ref["img"].shape
            mean, p999 = grey_level_diff(batch["img"], ref["img"])
            assert mean <= MEAN_TOL and p999 <= P999_TOL, (mean, p999)
            assert_same_targets(batch, ref, torch)


def test_the_test_loader_with_mixed_decoding_matches_its_cpu_graph(
    synthetic_dataset: Path, torch_cuda
) -> None:
    from dali_streampetr.loader import DaliStreamLoader
    from dali_streampetr.sampling.modes import EvalPass
    from dali_streampetr.settings import LoaderConfig

    torch = torch_cuda
    val = synthetic_dataset / "nuscenes2d_temporal_infos_val.pkl"
    passes = {}
    for device, device_id in (("cpu", None), ("gpu", 0)):
        cfg = LoaderConfig(device=device, num_threads=2, py_num_workers=1, samples_per_gpu=1, mode=EvalPass())
        with DaliStreamLoader(cfg, synthetic_dataset, ann_file=val, device_id=device_id) as test_loader:
            passes[device] = list(test_loader)
    assert len(passes["gpu"]) == len(passes["cpu"]) > 0
    for batch, ref in zip(passes["gpu"], passes["cpu"], strict=True):
        assert batch["img"].device == torch.device("cuda", 0) and batch["img"].shape == ref["img"].shape
        mean, p999 = grey_level_diff(batch["img"], ref["img"])
        assert mean <= MEAN_TOL and p999 <= P999_TOL, (mean, p999)
        assert_same_targets(batch, ref, torch)


def test_fast_image_path_on_the_gpu(synthetic_dataset: Path, cpu_batches, torch_cuda) -> None:
    """``image_path="fast"`` with ``device="gpu"``: nvJPEG + the GPU's linear resize give the CPU fast
    graph's images within the GPU-vs-CPU image tolerance, other pixels than the exact path (the
    setting reached the GPU graph), and the exact path's targets bit for bit."""
    torch = torch_cuda
    with loader(synthetic_dataset, "cpu", None, "fast") as cpu_fast:
        cpu_fast_batches = [next(cpu_fast) for _ in range(BATCHES)]
    with loader(synthetic_dataset, "gpu", 0, "fast") as gpu_fast:
        for ref, exact in zip(cpu_fast_batches, cpu_batches, strict=True):
            batch = next(gpu_fast)
            assert batch["img"].device == torch.device("cuda", 0) and batch["img"].shape == ref["img"].shape
            mean, p999 = grey_level_diff(batch["img"], ref["img"])
            assert mean <= MEAN_TOL and p999 <= P999_TOL, (mean, p999)
            # CPU fast vs CPU exact on this set: mean 0.5, 99.9th percentile 11 (docs/loader.md);
            # nvJPEG's decode differs from libjpeg's by far less
            diff = (batch["img"].double().cpu() - exact["img"].double()).abs() * torch.from_numpy(
                STD
            ).double().view(3, 1, 1)
            assert diff.mean().item() >= 0.25, diff.mean().item()
            assert_same_targets(batch, exact, torch)
            assert_same_targets(ref, exact, torch)


def test_cpu_decoding_delivered_on_the_gpu(synthetic_dataset: Path, cpu_batches, torch_cuda) -> None:
    """``device='cpu'`` with a ``device_id``: DALI copies the CPU graph's images to that GPU."""
    torch = torch_cuda
    with loader(synthetic_dataset, "cpu", 0) as on_gpu:
        for ref in cpu_batches:
            batch = next(on_gpu)
            assert batch["img"].is_cuda and torch.equal(batch["img"].cpu(), ref["img"])
            assert_same_targets(batch, ref, torch)


def test_loader_on_the_gpu_of_local_rank(
    synthetic_dataset: Path, cpu_batches, torch_cuda, monkeypatch
) -> None:
    """The device id the integration passes is LOCAL_RANK's (``local_device_id``; the stack test
    tests/upstream/test_dali_integration_stack.py checks the integration uses it); the images land
    on that GPU, written on the caller's current stream (read back on that stream without a
    device-wide synchronisation)."""
    torch = torch_cuda
    from dali_streampetr.pipeline.graph import local_device_id

    rank = torch.cuda.device_count() - 1  # the last GPU: a wrong default (0) shows on multi-GPU hosts
    monkeypatch.setenv("LOCAL_RANK", str(rank))
    device_id = local_device_id("gpu")
    assert device_id == rank
    stream = torch.cuda.Stream(device=rank)
    with loader(synthetic_dataset, "gpu", device_id) as gpu, torch.cuda.device(rank):
        with torch.cuda.stream(stream):
            batches = [next(gpu) for _ in range(BATCHES)]
            checksums = [b["img"].double().sum() for b in batches]  # queued on `stream`, after the copies
        stream.synchronize()
    for batch, ref, checksum in zip(batches, cpu_batches, checksums, strict=True):
        assert batch["img"].device == torch.device("cuda", rank)
        assert batch["lidar2img"].device.type == "cpu"  # targets stay on the host, as the DataLoader's
        mean, p999 = grey_level_diff(batch["img"], ref["img"])
        assert mean <= MEAN_TOL and p999 <= P999_TOL, (mean, p999)
        # float64 sums of the same N values, in whatever order (tests/float_tolerance.py): gamma_N sum |x|
        atol = float_atol(np.float64, batch["img"].double().abs().sum().item(), batch["img"].numel())
        assert abs(checksum.item() - batch["img"].double().sum().item()) <= atol


@pytest.mark.stack
@pytest.mark.slow
def test_two_training_iterations_with_the_dali_gpu_config(
    synthetic_dataset: Path, torch_cuda, tmp_path
) -> None:
    """The small smoke model (no pretrained weights to download) trained on the loader settings of
    the DALI GPU configs (``device='gpu'``, 4 threads), through the runner of ``nox -s train_dali``."""
    cmd = [
        sys.executable, "-m", "upstream_run", "train", "--loader", "dali", "--config", "small",
        "--iters", "2", "--data-root", str(synthetic_dataset), "--work-dir", str(tmp_path),
        "--cfg-options", "data_loading_config.device=gpu", "data_loading_config.num_threads=4",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "scripts")}
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert "Iter [2/2]" in output and "all losses finite" in output
