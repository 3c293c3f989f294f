"""``python -m wheelhouse.node_env {build,mmcv-wheel} --env DIR --torch-from PY --wheelhouse DIR [choices]``:
the OpenMMLab env on a node's own torch, offline, from a stack kit's reassembled wheelhouse
(``gpu_check --stack``).

The wheelhouse's source-built entries are put where the env builder's cache looks (mmcv-full's sdist,
the mmdet3d wheel), pip is pointed at the folder with the index disabled and no pip config, and the
env builder does the rest: ``python -m upstream_env mmcv-wheel ...`` compiles the mmcv-full wheel
while the kit's other bundles travel (the first bundles hold what it needs), ``python -m upstream_env
build ...`` with the same choices then builds the env and reuses that wheel. The parts were verified
against the kit's manifest before they were reassembled.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from gpukit import clean_pip_env

from .offline import seed_cache


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="wheelhouse.node_env", description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("build", "mmcv-wheel"), help="upstream_env's command to run")
    ap.add_argument("--wheelhouse", type=Path, required=True, help="the reassembled wheels and locks/")
    args, choices = ap.parse_known_args(argv)
    seeded = seed_cache(args.wheelhouse)
    offline = clean_pip_env(dict(os.environ))  # no PIP_* settings or pip config of the node
    os.environ.clear()
    os.environ.update(offline, PIP_FIND_LINKS=str(args.wheelhouse))
    print(f"node_env: wheel cache seeded with {len(seeded)} entries; index disabled", flush=True)
    print("node_env: upstream_env", args.command, *choices, flush=True)
    return subprocess.run([sys.executable, "-m", "upstream_env", args.command, *choices]).returncode


if __name__ == "__main__":
    sys.exit(main())
