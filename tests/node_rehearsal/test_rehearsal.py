"""The node rehearsal runs docs/gpu.md's call sequence for the lent machine, call for call."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from node_rehearsal.rehearsal import budget, calls, node_environment

REPO = Path(__file__).resolve().parents[2]


def manifest(bundles: int, early: int) -> dict:
    parts = [{"bundle": f"b{i:02d}"} for i in range(1, bundles + 1)]
    return {"files": [{"parts": parts}], "stack": {"early_bundles": early}}


def documented_calls() -> dict[str, tuple[list[str], str]]:
    """docs/gpu.md's table of calls: call -> (carried folders, command)."""
    text = (REPO / "docs" / "gpu.md").read_text()
    rows = re.findall(
        r"^\| (\d+(?: … \d+)?) \| (.*?) \| `(.*?)`(?: \(`timeout_s` \d+\))? \| .* \|$", text, re.M
    )
    return {call: (re.findall(r"`([^`]+)`", carry), command) for call, carry, command in rows}


def test_the_sequence_is_the_one_docs_gpu_md_gives_for_the_lent_machine() -> None:
    sequence, docs = calls(manifest(9, 1)), documented_calls()
    assert list(docs) == ["1", "2 … 8", "9", "10"] and len(sequence) == 10
    for call, index in (("1", 0), ("9", 8), ("10", 9)):
        assert sequence[index].command == docs[call][1], call
        assert list(sequence[index].carry) == docs[call][0] or (call == "10" and not sequence[index].carry)
    assert {c.command for c in sequence[1:8]} == {docs["2 … 8"][1]}
    assert [c.carry for c in sequence[1:8]] == [
        (f"out/wheelhouse/gpu-stack-parts/b0{i}",) for i in range(2, 9)
    ]


def test_a_kit_with_the_toolkit_starts_the_compile_with_its_last_early_bundle() -> None:
    # docs/gpu.md: carry b01, b02 in calls 1 and 2, start the mmcv run in call 3 with b03, the env
    # run with b11 in call 11
    sequence = calls(manifest(11, 3), extra=" --cuda-ops", last=" --quick")
    starts = {i: c.command for i, c in enumerate(sequence, 1) if "--until" in c.command}
    assert list(starts) == [3, 11] and "--until mmcv" in starts[3] and "--until env" in starts[11]
    assert all("--stack --cuda-ops --until" in c for c in starts.values())
    assert "mmcv.log" not in sequence[0].command + sequence[1].command  # nothing to show before call 3
    assert sequence[-1].carry == () and " --quick; rc=$?" in sequence[-1].command


def test_the_budget_waits_for_the_env_the_call_before_last_starts() -> None:
    sequence = calls(
        manifest(9, 1)
    )  # calls start 15 s apart: the env run in call 9 at 120 s, call 10 at 135 s
    steps = {"mmcv": {"cpu_s": 186.0}, "env": {"cpu_s": 72.0}}
    plan = budget(steps, sequence, units=7)  # the compile: 27 s on 7 of 16 cores, done long before call 9
    assert (plan["mmcv_node_s"], plan["env_left_s"]) == (27, 57)  # 120 + 72 - 135
    assert plan["total_s"] == 90 + 9 * 15 + 57 + 480 and plan["margin_s"] == 900 - plan["total_s"]
    slow = budget({**steps, "mmcv": {"cpu_s": 16 * 200.0}}, sequence, units=98)  # the full op set
    assert slow["env_left_s"] == 200 + 72 - 135  # the env run waits for the compile's lock


def test_the_calls_temp_files_stay_in_the_nodes_folder(tmp_path: Path) -> None:
    """A call's temp folder (multiprocessing's ``pymp-*`` of a killed process stays behind) is the node's
    own, removed with it, not the host's /tmp."""
    home = tmp_path / "node" / "home"
    env = node_environment(Path(sys.executable), home, tmp_path / "results")
    made = subprocess.run(
        [sys.executable, "-c", "import tempfile; print(tempfile.mkdtemp(prefix='pymp-'))"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert Path(made).parent == home / "tmp"
