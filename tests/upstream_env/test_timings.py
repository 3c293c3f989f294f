"""Build progress (hermetic, stdlib only): ETAs from this machine's recorded builds when there are
some (median, scaled by cores for compile steps), else from the 2-core reference; a broken
record file never breaks a build; the heartbeat runs on a timer, not on output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from upstream_env import timings


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path))
    return tmp_path


def test_without_records_the_reference_is_scaled_by_cores_for_compiles_only() -> None:
    compile_s, _ = timings.REFERENCE["mmcv-reduced"]
    torch_s, _ = timings.REFERENCE["torch"]
    assert timings.estimate("mmcv-reduced", cores=2) == (compile_s, "measured on a 2-core host")
    seconds, where = timings.estimate("mmcv-reduced", cores=8)
    assert seconds == compile_s / 4 and where.endswith("scaled to 8 cores")
    assert timings.estimate("torch", cores=8) == (torch_s, "measured on a 2-core host"), "I/O-bound"
    assert timings.estimate("no-such-step") is None
    assert timings.eta_line("no-such-step").startswith("ETA: unknown")


def test_recorded_builds_win_and_their_median_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timings, "_cores", lambda: 2)
    for seconds in (100.0, 300.0, 120.0):
        timings.record("mmcv-reduced", seconds)
    assert timings.estimate("mmcv-reduced", cores=2) == (
        120.0,
        "median of 3 earlier build(s) on this machine",
    )
    assert timings.estimate("mmcv-reduced", cores=4)[0] == 60.0
    for seconds in range(10):
        timings.record("mmcv-reduced", float(seconds))
    assert len(json.loads(timings.timings_file().read_text())["mmcv-reduced"]) == timings.KEEP
    assert "ETA ≈ 7 s (median of 5" in timings.eta_line("mmcv-reduced")


@pytest.mark.parametrize(
    "content",
    ["{broken", "[1, 2]", json.dumps({"torch": [{"seconds": "x", "cores": 2}, {"seconds": 5, "cores": 0}]})],
)
def test_a_broken_record_file_falls_back_to_the_reference(content: str) -> None:
    timings.timings_file().write_text(content)
    assert timings.estimate("torch", cores=2) == (timings.REFERENCE["torch"][0], "measured on a 2-core host")
    timings.record("torch", 42.0)  # and a build still records over it
    assert timings.estimate("torch", cores=2)[0] == 42.0


def test_human_durations() -> None:
    assert timings.human(59.4) == "59 s"
    assert timings.human(95) == "1 min 35 s"


def test_the_heartbeat_runs_while_a_command_prints_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import sys

    from upstream_env import runlog

    monkeypatch.setattr(runlog, "HEARTBEAT_S", 0.1)
    log = runlog.BuildLog(tmp_path / "build.log", total_steps=1)
    code = "import time; time.sleep(0.6); print('[1/3] c++ a.cpp', flush=True)"
    log.run([sys.executable, "-c", code], what="compile")
    log.close()
    beats = [line for line in capsys.readouterr().err.splitlines() if line.strip().startswith("...")]
    assert len(beats) >= 3, "a silent compile still shows it is alive"
    assert all(beat.strip().startswith("... compile: ") for beat in beats), "a beat names its command"


def test_the_compile_countdown_uses_the_rate_so_far() -> None:
    from upstream_env.runlog import compile_progress

    assert compile_progress([], 10.0) == ""
    assert compile_progress([(1, 4, 30.0)], 30.0) == " (compiled 1/4, ≈ 1 min 30 s left)"
    assert compile_progress([(1, 4, 30.0)], 60.0) == " (compiled 1/4, ≈ 1 min 00 s left)", "counts down"
    assert compile_progress([(1, 4, 30.0)], 500.0) == " (compiled 1/4, ≈ 0 s left)"
    assert compile_progress([(4, 4, 90.0)], 95.0) == " (compiled 4/4)"


def test_a_step_reports_its_cpu_time(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import sys

    from upstream_env import runlog

    log = runlog.BuildLog(tmp_path / "build.log", total_steps=1)
    started = log.begin("busy", "busy-step")
    log.run(
        [
            sys.executable,
            "-c",
            "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass",
        ]
    )
    log.done(started, timing="busy-step")
    log.close()
    cpu = float(capsys.readouterr().err.split("(CPU ")[1].split(" s)")[0])
    assert cpu >= 0.3, "the child's CPU seconds are counted"
    (run,) = json.loads(timings.timings_file().read_text())["busy-step"]
    assert run["cpu_seconds"] >= 0.3
