"""``python -m gpu_kits [--out DIR] [--only kit|stack-kit] [--cuda 12|13] [--kit-python 3.11,3.12]``

Makes the GPU check kit (``nox -s gpu_kits``: ``<out>/gpu-kit``) from wheels it collects into the
wheelhouse folder ``out``; prints what it made and its size. ``--only stack-kit`` makes the stack kit
instead (``<out>/gpu-stack-kit`` and its bundles ``<out>/gpu-stack-parts/bNN``: the OpenMMLab env for
a node with its own CUDA torch; one Python).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from wheelhouse import Wheelhouse, WheelhouseError

from .kit_folder import ROOT, MiB, build_kit, collect_kit, kit_size
from .stack_kit import build_stack_kit, describe, git_ignored


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="gpu_kits", description=__doc__.split("\n\n")[1])
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "wheelhouse", help="folder (out/wheelhouse)")
    ap.add_argument("--cuda", type=int, choices=(12, 13), default=12, help="CUDA major of the kit's DALI")
    ap.add_argument("--only", choices=("kit", "stack-kit"), default="kit", help="which kit (kit)")
    ap.add_argument("--kit-python", default="3.11,3.12", help="Python versions of the kit (3.11,3.12)")
    ap.add_argument("--part-mib", type=int, default=60, help="largest part (stack kit: bundle) in MiB (60)")
    ap.add_argument("--cuda-arch", default="9.0", help="stack kit: the node's GPU arch (9.0: H100/H200)")
    ap.add_argument("--kit-torchvision", help="stack kit: carry this torchvision (a node without one)")
    ap.add_argument("--kit-toolkit", action="store_true", help="stack kit: carry nvcc (a node without one)")
    args = ap.parse_args(argv)
    if args.part_mib < 1:
        ap.error("--part-mib must be >= 1")
    versions, part = [v.strip() for v in args.kit_python.split(",") if v.strip()], args.part_mib * MiB
    if args.only == "stack-kit" and len(versions) != 1:
        ap.error(f"the stack kit is for one Python (the node's): --kit-python 3.12, not {versions}")
    out, python, started = args.out.resolve(), sys.executable, time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    try:
        if args.only == "kit":
            kit = build_kit(out, collect_kit(Wheelhouse(python, out), versions, args.cuda), args.cuda, part)
            files, size = kit_size(kit)
            took = time.monotonic() - started
            print(f"gpu kit: {kit} ({files} files, {size / MiB:.0f} MiB; {took:.0f} s)", flush=True)
        else:
            kit = build_stack_kit(out, versions[0], args.cuda, max_part_bytes=part,
                                  cuda_arch=args.cuda_arch, torchvision=args.kit_torchvision,
                                  toolkit=args.kit_toolkit)  # fmt: skip
            print(f"stack kit: {kit} ({time.monotonic() - started:.0f} s)\n{describe(kit)}", flush=True)
            if kit.is_relative_to(ROOT) and not git_ignored(kit):
                print(f"  note: git does not ignore {kit}: a lent machine's carry takes ignored folders only")
    except WheelhouseError as exc:
        print(f"gpu_kits: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
