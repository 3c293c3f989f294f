"""``python -m gpu_kits.gpu_check [--wheelhouse DIR] [--cuda 12|13] [--kit-python V,..] [runner
options]`` (``nox -s gpu_check``): make the kit in the wheelhouse (downloading what it lacks), then
run it here as ``gpu_check.py`` runs on a node. "The node's torch" is this interpreter's (the
hermetic env's CPU torch), or the OpenMMLab env's CUDA torch when it sees a GPU (then the kit's
DALI follows that torch's CUDA major unless ``--cuda`` says otherwise). The runner's options
(``--quick``, ``--threads``, ``--work``, ``--python``, ...) pass through.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from gpukit import CheckError, probe
from upstream_env import env_python

from .__main__ import main as kits_main
from .kit_folder import ROOT


def gpu_torch() -> tuple[str, str] | None:
    """(python, CUDA major) of the OpenMMLab env when that env's torch sees a CUDA device (asked,
    not guessed from ``nvidia-smi`` on PATH), else None."""
    python = env_python()
    if not python.exists():
        return None
    try:
        node = probe(python)
    except CheckError:
        return None
    return (str(python), node["torch_cuda"].split(".")[0]) if node["cuda_available"] else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="gpu_kits.gpu_check", description=__doc__.split("\n\n")[0], add_help=False
    )
    ap.add_argument("--wheelhouse", type=Path, default=ROOT / "out" / "wheelhouse")
    ap.add_argument("--cuda", default=None, help="CUDA major of the kit's DALI (12, or the GPU torch's)")
    ap.add_argument("--kit-python", default="3.11,3.12")
    args, runner_args = ap.parse_known_args(sys.argv[1:] if argv is None else argv)
    if "-h" in runner_args or "--help" in runner_args:
        print(ap.format_usage(), end="", flush=True)
        return subprocess.call([sys.executable, "-m", "gpukit.runner", "--help"])
    cuda = args.cuda or "12"
    found = None if "--python" in runner_args else gpu_torch()
    if found:
        python, major = found
        cuda = args.cuda or major
        print(f"gpu_check: a GPU, and {python} has a CUDA {major} torch that sees it: using that torch")
        runner_args += ["--python", python]
    kit = ["--out", str(args.wheelhouse), "--only", "kit", "--cuda", cuda, "--kit-python", args.kit_python]
    if made := kits_main(kit):
        return made
    work = [] if "--work" in runner_args else ["--work", str(ROOT / "out" / "gpu-check")]
    sys.stdout.flush()  # then the kit's gpu_check.py, as a node runs it
    return subprocess.call(
        [sys.executable, str(args.wheelhouse / "gpu-kit" / "gpu_check.py"), *work, *runner_args]
    )


if __name__ == "__main__":
    sys.exit(main())
