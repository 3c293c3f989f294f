"""gpu_check: the GPU tier of streampetr-dali on a bare CUDA node, from a kit folder, offline.

``python3 gpu_check.py`` (the kit's launcher, :mod:`.launcher`; this package beside it in the kit,
both copied there by ``nox -s gpu_kits``), run with a Python 3.11/3.12 that has a CUDA build of
torch. Stdlib only. Steps:

1. verify every part against ``manifest.json`` (a part with a wrong size or hash is refused, by
   name) and reassemble the wheels, the lock and the project's sources;
2. a venv with the loader's packages installed from those wheels only (``--no-index``, hashes
   required, no pip config), and a ``.pth`` file that reuses this interpreter's torch;
3. the synthetic data set;
4. ``tests/gpu``'s loader tests (``-m "gpu and not stack"``: nothing of the mmcv stack);
5. the loader benchmark, DALI on the GPU vs DALI on the CPU (``loaderbench.sweep.kit``): JSON + PNG.

Without a CUDA device the GPU half (the tests' GPU asserts, the benchmark's GPU rows) is skipped
with one line and the rest runs. Exit status 0 only when every step passed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .node import make_venv, probe
from .parts import load_manifest, reassemble, unpack
from .stack import QUICK_DATA, STEPS, run_stack
from .steps import CheckError, Steps, run


def parse_args(argv: list[str] | None, default_kit: Path | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="gpu_check", description=__doc__.split("\n\n")[0])
    ap.add_argument("--kit", type=Path, default=default_kit, help="the kit folder (default: gpu_check.py's)")
    ap.add_argument("--work", type=Path, default=None, help="work folder (default: <kit>/work)")
    ap.add_argument("--python", default=sys.executable, help="a python with the node's torch (default: this)")
    ap.add_argument("--threads", default="1,2,4,8,16", help="DALI thread counts, capped at the cores")
    ap.add_argument("--quick", action="store_true", help="a short benchmark (CI: the CPU half in a minute)")
    ap.add_argument("--data-root", type=Path, default=None, help="an existing synthetic data set to reuse")
    ap.add_argument(
        "--allow-cuda-mismatch", action="store_true",
        help="run although the kit's DALI is for another CUDA major than the node's torch (not --stack)",
    )  # fmt: skip
    stack = ap.add_argument_group("stack mode (a stack kit: the OpenMMLab env on the node's torch)")
    stack.add_argument("--stack", action="store_true", help="build the env, train, evaluate, benchmark")
    stack.add_argument(
        "--until", choices=STEPS, help="stop after this step (a background run while parts travel)"
    )
    stack.add_argument(
        "--parts", type=Path, help="the folder holding the parts' bundles (default: the kit's)"
    )
    stack.add_argument(
        "--results", type=Path, help="stack-run.json, tests.xml, bench.json/png (default: work)"
    )
    stack.add_argument("--iters", type=int, default=20, help="training iterations per loader (default 20)")
    stack.add_argument("--workers", type=int, default=4, help="DataLoader workers of train_torch (default 4)")
    stack.add_argument(
        "--config", help="training config of upstream_run train (default smoke; --quick: small)"
    )
    stack.add_argument(
        "--cuda-arch", default="9.0", help="TORCH_CUDA_ARCH_LIST of mmcv's ops (9.0: H100/H200)"
    )
    stack.add_argument(
        "--cuda-ops", action="store_true",
        help="compile mmcv's CUDA ops although torch sees no GPU (a rehearsal of the node on a CPU host)",
    )  # fmt: skip
    stack.add_argument("--bench-workers", default="1,2,4,8,16", help="the DataLoader rows of the benchmark")
    stack.add_argument("--bench-threads", default="4", help="DALI's CPU threads in its GPU rows (default 4)")
    args = ap.parse_args(argv)
    if args.kit is None:
        ap.error("--kit is needed outside a kit folder (there gpu_check.py passes its own)")
    args.config = args.config or ("small" if args.quick else "smoke")
    return args


def probe_node(python: str, kit: Path, steps: Steps, allow_cuda_mismatch: bool) -> tuple[dict, dict]:
    """Step 1: the node's python and torch (:func:`gpukit.node.probe`; without torch, what the kit
    needs) and the kit's manifest, printed and matched (:func:`require_a_matching_kit`)."""
    started = steps.begin("the node's python and torch")
    try:
        node = probe(python)
    except CheckError as exc:
        hint = "The kit reuses the node's torch: run it with a python that has torch."
        raise CheckError(f"{exc}\n{hint}") from None
    manifest = load_manifest(kit)
    gpu = f"{node['devices']} GPU(s)" + (f": {node['gpu']}" if node["gpu"] else "")
    wheels = ", ".join(manifest["locks"])
    print(f"      {node['tag']}, torch {node['torch']} (CUDA {node['torch_cuda']}), {gpu}; "
          f"kit: DALI for CUDA {manifest['dali_cuda']}, wheels for {wheels}")  # fmt: skip
    require_a_matching_kit(node, manifest, allow_cuda_mismatch)
    steps.end("probe", started)
    return node, manifest


def require_a_matching_kit(node: dict, manifest: dict, allow_cuda_mismatch: bool) -> None:
    """Refuse a kit without wheels for the node's python, or with DALI for another CUDA major."""
    if node["tag"] not in manifest["locks"]:
        raise CheckError(
            f"the kit holds wheels for {', '.join(manifest['locks'])}, this python is {node['tag']}; "
            "build one for it: nox -s gpu_kits -- --kit-python X.Y"
        )
    torch_major = (node["torch_cuda"] or "").split(".")[0]
    if torch_major and torch_major != str(manifest["dali_cuda"]) and not allow_cuda_mismatch:
        raise CheckError(
            f"the node's torch is built for CUDA {torch_major}, the kit's DALI for CUDA "
            f"{manifest['dali_cuda']}: build the kit with `nox -s gpu_kits -- --cuda {torch_major}` "
            "(or pass --allow-cuda-mismatch)"
        )


def main(argv: list[str] | None = None, default_kit: Path | None = None) -> int:
    args = parse_args(argv, default_kit)
    kit = args.kit.resolve()
    work = (args.work or kit / "work").resolve()
    if args.stack:
        return stack_main(args, kit, work)
    steps = Steps(6)
    t0 = time.monotonic()
    try:
        node, manifest = probe_node(args.python, kit, steps, args.allow_cuda_mismatch)
        started = steps.begin(
            f"verify and reassemble {sum(len(f['parts']) for f in manifest['files'])} parts"
        )
        files = reassemble(kit, manifest, work / "wheels", work / "kit")
        source = work / "kit" / manifest["source"]
        src = work / "src"
        shutil.rmtree(src, ignore_errors=True)
        unpack(source, src)
        print(f"      {len(files)} files, {sum(f.stat().st_size for f in files) / 2**20:.0f} MiB verified")
        steps.end("reassemble", started)

        started = steps.begin("venv from the kit's wheels (index disabled), reusing the node's torch")
        lock = work / "kit" / manifest["locks"][node["tag"]]
        venv_info = make_venv(args.python, work / "venv", work / "wheels", lock, node["torch_site"])
        print(f"      DALI {venv_info['dali']}, numpy {venv_info['numpy']}, torch {venv_info['torch']}")
        if (
            venv_info["cuda_available"] != node["cuda_available"]
            or venv_info["cuda_tensor"] != node["cuda_available"]
        ):
            raise CheckError("torch uses CUDA outside the venv but not inside it (its libraries shadowed?)")
        steps.end("venv", started)
        vpy = str(work / "venv" / "bin" / "python")
        # tests/ too: the GPU tests import its helpers (tests/conftest.py is not loaded here)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(str(src / p) for p in ("scripts", "overlay", "tests")),
        }

        started = steps.begin("the synthetic data set")
        data = args.data_root.resolve() if args.data_root else work / "data"
        if args.data_root is None:
            size = QUICK_DATA if args.quick else []
            made = run([vpy, "-m", "synthdata", "--out", data, *size], env=env, what="synthdata")
            print("      " + made.strip())
        steps.end("data", started)

        gpu = node["cuda_available"]
        if not gpu:
            print("GPU half skipped: torch sees no CUDA device (the GPU tests skip; no GPU benchmark rows)")
        failures = []
        started = steps.begin('tests/gpu -m "gpu and not stack"')
        tests = [vpy, "-m", "pytest", "-p", "gpukit.plugin", "--noconftest", "-p", "no:cacheprovider"]
        tests += ["-m", "gpu and not stack", "-q", "tests/gpu", "--junitxml", work / "results" / "tests.xml"]
        tests += ["-rA"] if gpu else []
        proc = subprocess.run([str(c) for c in tests], cwd=src, env={**env, "GPU_CHECK_DATA": str(data)})
        if proc.returncode != 0:
            failures.append(f"tests/gpu (exit {proc.returncode})")
        steps.end("tests", started)

        started = steps.begin("loader benchmark: DALI GPU vs DALI CPU")
        bench = [vpy, "-m", "loaderbench.sweep.kit", "--data-root", data, "--out", work / "results"]
        bench += ["--threads", args.threads, *(["--quick"] if args.quick else [])]
        proc = subprocess.run([str(c) for c in bench], cwd=src, env=env)
        if proc.returncode != 0:
            failures.append(f"benchmark (exit {proc.returncode})")
        steps.end("bench", started)
        if failures:
            raise CheckError("failed: " + "; ".join(failures))
    except CheckError as exc:
        print(f"gpu_check FAILED after {time.monotonic() - t0:.0f} s: {exc}", file=sys.stderr)
        return 1
    half = "GPU and CPU" if gpu else "CPU half only (no CUDA device)"
    print(f"gpu_check PASSED ({half}) in {time.monotonic() - t0:.0f} s; results in {work / 'results'}")
    return 0


def stack_main(args: argparse.Namespace, kit: Path, work: Path) -> int:
    """``--stack``: the node's probe, then :func:`gpukit.stack.run_stack`."""
    steps = Steps(len(STEPS[: STEPS.index(args.until) + 1] if args.until else STEPS) + 1)
    t0 = time.monotonic()
    try:
        # no --allow-cuda-mismatch here: the env builder installs DALI of the torch's CUDA major
        node, manifest = probe_node(args.python, kit, steps, allow_cuda_mismatch=False)
        if not node["cuda_available"]:
            ops = "CUDA ops compiled all the same (--cuda-ops)" if args.cuda_ops else "CPU ops"
            print(f"GPU half skipped: torch sees no CUDA device ({ops}, CPU loaders, the GPU tests skip)")
        summary = run_stack(args, kit, work, node, manifest, steps)
    except CheckError as exc:
        print(f"gpu_check --stack FAILED after {time.monotonic() - t0:.0f} s: {exc}", file=sys.stderr)
        return 1
    done = f"up to {args.until}" if args.until else "every step"
    print(f"gpu_check --stack PASSED ({done}) in {time.monotonic() - t0:.0f} s; summary {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
