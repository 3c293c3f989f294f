"""The hand-over to the training thread: targets computed in the external-source worker arrive bit
for bit as the in-process computation makes them, images come without a copy and stay valid."""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from dali_streampetr.batch.assembly import BatchAssembler
from dali_streampetr.batch.transforms import frame_targets
from dali_streampetr.batch_schema import GEOMETRY_KEYS, LIST_KEYS
from dali_streampetr.config.reader import loader_config_from
from dali_streampetr.loader import DaliStreamLoader, build_loader
from loader_data import tiny_config


def same(a: torch.Tensor, b: np.ndarray) -> bool:
    """Bit for bit: dtype, shape and every value (NaN-free data)."""
    return (
        a.dtype == torch.from_numpy(b).dtype
        and tuple(a.shape) == b.shape
        and torch.equal(a, torch.from_numpy(b))
    )


def expected_batch(loader, iteration: int) -> dict:
    """What the loader assembled on the training thread before the targets moved to the worker:
    ``frame_targets`` of every planned frame, stacked / nested the same way."""
    per_sample = [
        frame_targets(loader.frames[p.index], p.draw, loader.cfg) for p in loader.planner.plan(iteration)
    ]
    out = {key: np.stack([t[key] for t in per_sample])[:, None] for key in GEOMETRY_KEYS}
    for key in LIST_KEYS:
        out[key] = [[t[key]] for t in per_sample]
    return out


@pytest.mark.parametrize("workers,start", [(1, "fork"), (1, "spawn"), (0, "none")])
def test_worker_targets_equal_in_process_targets(tiny_root, workers, start, monkeypatch):
    """Forked worker (no CUDA in the process), spawned worker (CUDA initialised: DALI refuses to
    fork, faked here) and no worker give the targets of the in-process computation."""
    from nvidia.dali import backend

    monkeypatch.setattr(backend, "IsDriverInitialized", lambda: start == "spawn")
    with build_loader(tiny_config(py_num_workers=workers), tiny_root, seed=3) as loader:
        next(loader)
        if workers:  # a spawned worker runs multiprocessing's spawn_main, a forked one our command line
            (pid,) = loader._pipe._py_pool.pids()
            spawned = "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()
            assert spawned == (start == "spawn")
        loader.close()
        loader.iteration = 0
        for iteration in range(4):
            batch, want = next(loader), expected_batch(loader, iteration)
            torch.save(batch, io.BytesIO())  # no two tensors alias one buffer as different dtypes
            for key in GEOMETRY_KEYS:
                assert same(batch[key], want[key]), (iteration, key)
            for key in ("gt_bboxes_3d", "gt_labels_3d"):
                for got, exp in zip(batch[key], want[key], strict=True):
                    assert same(got[0], exp[0]), (iteration, key)
            for key in ("gt_bboxes", "gt_labels", "centers2d", "depths"):
                for got, exp in zip(batch[key], want[key], strict=True):
                    assert len(got[0]) == len(exp[0]) == 6
                    assert all(same(g, e) for g, e in zip(got[0], exp[0], strict=True)), (iteration, key)


def test_images_are_dalis_buffer_and_stay_valid(tiny_root):
    """No copy on the CPU (the tensor is a view of DALI's output), and a kept batch is never
    overwritten by later batches or by closing the loader."""
    loader = build_loader(tiny_config(py_num_workers=1, prefetch_queue_depth=2), tiny_root, seed=5)
    loader._build()  # the pipeline of iteration 0, before any run
    run, seen = loader._pipe.run, []
    loader._pipe.run = lambda: seen.append(run()) or seen[-1]  # the real outputs, kept for a look
    img = next(loader)["img"]
    assert img.data_ptr() == np.asarray(seen[0][0].as_tensor()).ctypes.data  # same memory: no copy
    del loader._pipe.run, img
    seen.clear()
    kept = [next(loader)["img"] for _ in range(2)]
    copies = [t.clone() for t in kept]
    for _ in range(6):  # more than the prefetch queue holds: a recycled buffer would be overwritten
        next(loader)
    loader.close()
    junk = [torch.full_like(c, 7.0) for c in copies]  # freed memory would be reused here
    assert all(torch.equal(k, c) for k, c in zip(kept, copies, strict=True))
    assert not torch.equal(kept[0], kept[1]) and not torch.equal(kept[0], junk[0])


def test_a_batch_of_another_iteration_is_refused(tiny_root):
    """Every sample record names its iteration: pixels and targets of one iteration are never
    handed over as another's (here a batch is taken from the pipeline behind the loader's back)."""
    with build_loader(tiny_config(py_num_workers=1), tiny_root, seed=2) as loader:
        loader._build()
        loader._pipe.run()  # iteration 0 consumed out of band, before the loader ran anything
        with pytest.raises(RuntimeError, match=r"delivered iteration \[1\] as iteration 0"):
            next(loader)


# -- the run-ahead: the next batch is run and assembled while the model trains ------------------------


class RecordingAssembler(BatchAssembler):
    """Notes which iteration was assembled on which thread; fails the assembly of ``fail_at`` once."""

    def __init__(self, inner: BatchAssembler, fail_at: int) -> None:
        super().__init__(inner.cfg, inner.frames, inner.n_cams)
        self.assembled: list[tuple[int, str]] = []
        self.fail_at = fail_at

    def assemble(self, outputs, iteration: int) -> dict:
        self.assembled.append((iteration, threading.current_thread().name))
        if iteration == self.fail_at:
            self.fail_at = -1
            raise ValueError(f"assembly of iteration {iteration} broke")
        return super().assemble(outputs, iteration)


def recording(root: Path, fail_at: int = -1) -> DaliStreamLoader:
    """A loader whose ``assembler.assembled`` lists (iteration, thread) of every assembly."""
    loader = DaliStreamLoader(loader_config_from(tiny_config(py_num_workers=1)), root, seed=4)
    loader.assembler = RecordingAssembler(loader.assembler, fail_at)
    return loader


def indices(batch: dict) -> list[int]:
    return [d["index"] for d in batch["dali"]]


def test_the_next_batch_is_assembled_off_the_training_thread_before_it_is_asked_for(tiny_root):
    with recording(tiny_root) as loader:
        next(loader)
        deadline = time.monotonic() + 60
        while len(loader.assembler.assembled) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        # iteration 1 is ready although nobody called next() again, and no assembly ran here
        assert loader.assembler.assembled == [(0, "dali-pipeline-run"), (1, "dali-pipeline-run")]
        assert threading.current_thread().name != "dali-pipeline-run"
        second = next(loader)
        assert indices(second) == [p.index for p in loader.planner.plan(1)]
        assert loader.iteration == 2 and loader.state_dict()["iteration"] == 2  # handed over, not run


def test_loading_a_state_drops_the_batch_run_ahead(tiny_root):
    """A resumed position wins over the batch already assembled for the old one."""
    with build_loader(tiny_config(py_num_workers=1), tiny_root, seed=4) as loader:
        start = loader.state_dict()
        first = [next(loader) for _ in range(3)]  # iteration 3 runs ahead now
        loader.load_state_dict(start)
        again = next(loader)
    assert indices(again) == indices(first[0]) and torch.equal(again["img"], first[0]["img"])


def test_an_assembly_error_is_raised_by_its_own_next_and_the_loader_rebuilds_there(tiny_root):
    with build_loader(tiny_config(py_num_workers=1), tiny_root, seed=4) as clean:
        expected = [next(clean) for _ in range(4)]
    with recording(tiny_root, fail_at=2) as loader:
        got = [next(loader), next(loader)]  # iteration 2 fails on the run thread meanwhile
        with pytest.raises(ValueError, match="assembly of iteration 2 broke"):
            next(loader)
        assert loader.iteration == 2
        got += [next(loader), next(loader)]
    for a, b in zip(got, expected, strict=True):
        assert indices(a) == indices(b) and torch.equal(a["img"], b["img"])


def test_close_while_a_batch_runs_ahead_stops_the_worker_and_keeps_the_batch(tiny_root):
    loader = build_loader(tiny_config(py_num_workers=1), tiny_root, seed=4)
    batch = next(loader)  # iteration 1 starts on the run thread
    kept = batch["img"].clone()
    (pid,) = loader.worker_pids()
    loader.close()
    assert loader._pipe is None
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # the worker exits (and is reaped by multiprocessing)
    assert not Path(f"/proc/{pid}").exists()
    assert torch.equal(batch["img"], kept)


def test_collate_runs_on_the_training_thread_and_its_result_is_handed_over(tiny_root):
    seen = []

    def collate(batch):
        seen.append(threading.current_thread().name)
        return "wrapped", batch

    with build_loader(tiny_config(py_num_workers=1), tiny_root, seed=4, collate=collate) as loader:
        tag, batch = next(loader)
    assert tag == "wrapped" and isinstance(batch["img"], torch.Tensor)
    assert seen == [threading.current_thread().name]


@pytest.mark.parametrize("depth,ahead", [(1, 1), (2, 1), (3, 2)])
def test_prefetch_queue_depth_counts_the_batch_run_ahead(tiny_root, monkeypatch, depth, ahead):
    """``prefetch_queue_depth - 1`` batches (at least 1) are prepared ahead of the one handed over:
    the run-ahead holds one, DALI's queue the rest (the source runs in process here, so every
    iteration DALI schedules calls it).

    The count is read once the run-ahead is ready: in process the source runs inside
    ``pipe.run()`` on the run thread, so nothing is scheduled after that until the next ``next()``.
    (A second's sleep in its place stood for "whatever is prepared ahead is prepared now", which a
    loaded host does not keep.)"""
    from dali_streampetr.pipeline.source import ImageSource

    planned: list[int] = []
    call = ImageSource.__call__

    def recording_call(self, batch_info):
        planned.append(self.start + (batch_info if isinstance(batch_info, int) else batch_info.iteration))
        return call(self, batch_info)

    monkeypatch.setattr(ImageSource, "__call__", recording_call)
    with build_loader(tiny_config(py_num_workers=0, prefetch_queue_depth=depth), tiny_root, seed=4) as loader:
        for handed in range(1, 4):
            next(loader)
            deadline = time.monotonic() + 60
            while loader._watchdog._results.empty() and time.monotonic() < deadline:
                time.sleep(0.01)  # a model step, as long as the run-ahead takes
            assert max(planned) == handed - 1 + ahead, (handed, planned)


def test_close_with_a_run_ahead_stuck_on_a_hung_worker_kills_it_after_the_deadline(damaged_root):
    """``close()`` waits for a run-ahead only up to ``batch_timeout_s``; one that cannot end (its
    worker hangs in a read: an image of iteration 2 is a FIFO nobody writes) makes it kill the
    worker instead of waiting for ever.

    The worker hangs at a known iteration, not at a moment the test guesses: it reads iterations 0
    and 1 in full before it blocks, so both are handed over and the run-ahead of 2 cannot end. (A
    SIGSTOP at a random moment, then half a second's sleep to see whether a batch was still coming,
    guessed wrong on a loaded host.) The batches keep the default deadline; only this close runs
    under the short one."""
    loader = build_loader(tiny_config(py_num_workers=1), damaged_root, seed=4)
    earlier = {p.index for i in range(2) for p in loader.planner.plan(i)}
    index = next(p.index for p in loader.planner.plan(2) if p.index not in earlier)
    path = loader.frames[index].img_paths[1]
    os.unlink(path)
    os.mkfifo(path)
    planned = [[p.index for p in loader.planner.plan(i)] for i in range(2)]
    assert [indices(next(loader)) for _ in range(2)] == planned
    (pid,) = loader.worker_pids()
    loader._watchdog.timeout_s = 1.0  # the deadline under test, on this pipeline
    start = time.monotonic()
    loader.close()
    waited = time.monotonic() - start
    assert waited >= 1.0 and loader._pipe is None
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists()  # killed, not left hanging
