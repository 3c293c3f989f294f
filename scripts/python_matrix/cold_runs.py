"""`nox -s pythons`: for each supported CPython this host has (the newest of each minor, and the
distribution's own python3), a fresh clone of HEAD runs the README's set-up, a cold `nox -s train_dali`,
lint and the hermetic tier as a newcomer whose python3 is that Python would; a table and `pythons.json`."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from gpukit import Stopwatch
from interpreter import BasePython, base_python, other_pythons
from overlaytool import REPO_ROOT as ROOT
from overlaytool import cache_root

HERMETIC_TIER = "not stack and not upstream and not gpu"


def _timed(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[int, float]:
    timer = Stopwatch()
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        code = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    return code, round(timer.read()[0], 1)


def _first_losses(clone: Path) -> list[float]:
    losses = []
    for path in sorted((clone / "work_dirs" / "train_dali").glob("*.log.json")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("mode") == "train" and "loss" in entry:
                losses.append(round(float(entry["loss"]), 5))
    return losses


def run_one(label: str, base: BasePython, out: Path, tests: bool) -> dict:
    """A fresh clone where `base` is the user's python3, every cache empty but the upstream mirrors:
    the README's set-up (a venv with nox), then `nox -s train_dali` cold and (`tests`) lint and the
    hermetic tier."""
    python, version = Path(base.path), ".".join(map(str, base.version))
    log = out / f"python{label}.log"
    log.unlink(missing_ok=True)
    row: dict = {"python": version, "interpreter": str(python)}
    with tempfile.TemporaryDirectory(prefix=f"pythons-{label}-") as tmp:
        clone, tools, cache = Path(tmp) / "clone", Path(tmp) / "bin", Path(tmp) / "cache"
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
        tools.mkdir()  # python3 on PATH is this Python, as on a host that has only it
        (tools / "python3").symlink_to(python)
        empty = {
            "XDG_CACHE_HOME": cache,
            "PIP_CACHE_DIR": cache / "pip",
            "STREAMPETR_DALI_CACHE": cache / "sd",
        }
        mine = {k: v for k, v in os.environ.items() if not k.startswith("STREAMPETR_")}  # a newcomer has none
        env = {**mine, **{k: str(v) for k, v in empty.items()}, "CI": "false",
               "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
        nox = [str(clone / ".venv" / "bin" / "python"), "-m", "nox"]
        mirrors = [a for m in sorted((cache_root() / "mirrors").glob("*.git")) for a in ("--from", str(m))]
        for step in (["python3", "-m", "venv", ".venv"], [*nox[:1], "-m", "pip", "install", "-q", "-r",
                     "requirements/nox.txt"], [*nox, "-s", "fetch", "--", *mirrors]):  # fmt: skip
            row["setup_exit"] = _timed(step, clone, env, log)[0]
            if row["setup_exit"]:  # no nox: train_dali cannot start (the table says FAILED)
                print(f"pythons: Python {version}: `{' '.join(step[:4])}` failed; log {log}")
                return row | {"train_dali_exit": row["setup_exit"], "train_dali_seconds": 0.0, "losses": []}
        print(
            f"pythons: Python {version} ({python}): cold `nox -s train_dali` in a fresh clone …", flush=True
        )
        code, seconds = _timed([*nox, "-s", "train_dali"], clone, env, log)
        row |= {"train_dali_exit": code, "train_dali_seconds": seconds, "losses": _first_losses(clone)}
        print(f"pythons: Python {version}: train_dali exit {code} in {seconds:.0f} s, losses {row['losses']}")
        if tests:
            code, seconds = _timed([*nox, "-s", "lint"], clone, env, log)
            hermetic = clone / ".nox" / "_env" / "hermetic" / "bin" / "python"
            pytest = [str(hermetic), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", HERMETIC_TIER]
            tier_code, tier_seconds = _timed(pytest, clone, env | {"PYTHONPATH": ""}, log)
            row |= {"lint_exit": code, "hermetic_exit": tier_code, "hermetic_seconds": tier_seconds}
            print(f"pythons: Python {version}: lint exit {code}, hermetic tier exit {tier_code} in "
                  f"{tier_seconds:.0f} s")  # fmt: skip
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m python_matrix", description=__doc__)
    ap.add_argument(
        "--minors", help="only these, comma-separated: 3.11, 3.12, 3.13, system (default: every one found)"
    )
    ap.add_argument("--no-tests", action="store_true", help="only the cold train_dali")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "pythons", help="log files and pythons.json")
    args = ap.parse_args(argv)
    here = base_python()  # nox's venv: the interpreter it was made from is the host's
    here = BasePython(getattr(sys, "_base_executable", here.path), here.version)
    found = {b.label: b for b in [here, *other_pythons(here)]}
    wanted = args.minors.split(",") if args.minors else list(found)
    missing = [m for m in wanted if m not in found]
    if missing:
        print(
            f"pythons: no interpreter for {', '.join(missing)} on this host (PATH, pyenv, uv, "
            "the distribution's python3 for 'system')",
            file=sys.stderr,
        )
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    rows = {m: run_one(m, found[m], args.out, not args.no_tests) for m in wanted}
    (args.out / "pythons.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n| Python | train_dali | seconds | first losses | hermetic tier | seconds |")
    print("|---|---|---|---|---|---|")
    for row in rows.values():
        tier = "-" if "hermetic_exit" not in row else ("passed" if row["hermetic_exit"] == 0 else "FAILED")
        print(f"| {row['python']} | {'passed' if row['train_dali_exit'] == 0 else 'FAILED'} | "
              f"{row['train_dali_seconds']:.0f} | {', '.join(map(str, row['losses']))} | {tier} | "
              f"{row.get('hermetic_seconds', 0):.0f} |")  # fmt: skip
    failed = [
        r for r in rows.values() if r["train_dali_exit"] or r.get("hermetic_exit") or r.get("lint_exit")
    ]
    return 1 if failed else 0
