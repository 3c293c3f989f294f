"""``python -m node_rehearsal [--python PY] [--out DIR] [--keep]`` (``nox -s node_rehearsal``): the lent
GPU node's one run, rehearsed on this host with the node's own software (docs/gpu.md)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from upstream_env import read_pins, system_toolkit

from .rehearsal import (
    NODE,
    QUICK,
    ROOT,
    RehearsalError,
    budget,
    calls,
    check_the_build,
    ensure_standin,
    find_python,
    keep_logs,
    make_kit,
    node_environment,
    report,
    run_calls,
    timed,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="node_rehearsal", description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", help=f"a CPython {NODE['python']} (default: one this host offers)")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "node-rehearsal", help="(out/node-rehearsal)")
    ap.add_argument(
        "--keep", action="store_true", help="keep the kit and the node's folder (~4 GB) after a pass too"
    )
    args = ap.parse_args(argv)
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)  # a rehearsal starts from nothing but the stand-in venv
    out.mkdir(parents=True)
    made, node, results = out / "wheelhouse", out / "node", out / "results"
    home, log = node / "home", out / "calls.log"
    rows: list[dict] = []
    t0 = time.monotonic()
    try:
        python = find_python(args.python)
        standin = timed(rows, "the node's venv (stand-in)", ensure_standin, python)
        toolkit = system_toolkit()  # as the env builder finds it: $CUDA_HOME, else PATH
        release = toolkit.release if toolkit else None
        with_toolkit = release != NODE["cuda"]
        print(f"node_rehearsal: nvcc: {'the kit carries the toolkit' if with_toolkit else 'the host'}'s, "
              f"release {release or 'none'} here")  # fmt: skip
        manifest = timed(rows, "the stack kit", make_kit, made, with_toolkit, out / "kit.log")
        sequence = calls(manifest, extra=" --cuda-ops", last=" " + QUICK)
        home.mkdir(parents=True)
        results.mkdir()
        env = node_environment(standin, home, results)
        call_rows = timed(rows, f"{len(sequence)} calls", run_calls, sequence, made, node, env, log)
        summary = json.loads((results / "stack-run.json").read_text())
        steps = summary["steps"]
        work = home / "sk" / "work"
        kit_numpy = read_pins(next((work / "wheelhouse" / "locks").glob("gpu-stack-cp*.txt")))["numpy"]
        facts, units = check_the_build(work, standin, kit_numpy, env)
        plan = budget(steps, sequence, units)
    except RehearsalError as exc:
        print(f"node_rehearsal FAILED after {time.monotonic() - t0:.0f} s: {exc}", file=sys.stderr)
        print(f"node_rehearsal: the kit and the node's folder are kept for a look: {made}, {node}")
        return 1
    keep_logs(home / "sk", out / "logs")
    if not args.keep:  # the logs and results tell the run; the kit and the node's env are ~4 GB
        shutil.rmtree(made)
        shutil.rmtree(node)
    table = report(rows[:2], call_rows, steps, plan, facts)
    (out / "rehearsal.md").write_text(table)
    facts_json = {
        "node": NODE,
        "host": rows,
        "calls": call_rows,
        "steps": steps,
        "budget": plan,
        "facts": facts,
    }
    (out / "rehearsal.json").write_text(json.dumps(facts_json, indent=1) + "\n")
    print(table)
    print(
        f"node_rehearsal PASSED in {time.monotonic() - t0:.0f} s; {out}: rehearsal.md, rehearsal.json, logs/"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
