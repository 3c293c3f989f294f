"""``python -m gpukit [--wheelhouse DIR] [--cuda 12|13] [--kit-python V,..] [runner options]``
(``nox -s gpu_check``): make the kit in the wheelhouse (downloading what it lacks), then run it
here with this interpreter's torch, as ``gpu_check.py`` runs on a node. The runner's options
(``--quick``, ``--threads``, ``--work``, ``--python``, ...) pass through.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wheelhouse.__main__ import main as wheelhouse_main

from .build import ROOT
from .runner import main as runner_main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="gpukit", description=__doc__.split("\n\n")[0], add_help=False)
    ap.add_argument("--wheelhouse", type=Path, default=ROOT / "out" / "wheelhouse")
    ap.add_argument("--cuda", default="12")
    ap.add_argument("--kit-python", default="3.11,3.12")
    args, runner_args = ap.parse_known_args(sys.argv[1:] if argv is None else argv)
    if "-h" in runner_args or "--help" in runner_args:
        ap.print_usage()
        return runner_main(["--help"])
    made = wheelhouse_main(
        ["--out", str(args.wheelhouse), "--only", "kit", "--cuda", args.cuda, "--kit-python", args.kit_python]
    )
    if made != 0:
        return made
    work = [] if "--work" in runner_args else ["--work", str(ROOT / "out" / "gpu-check")]
    return runner_main(["--kit", str(args.wheelhouse / "gpu-kit"), *work, *runner_args])


if __name__ == "__main__":
    sys.exit(main())
