"""``python -m wheelhouse [--out DIR] [--cuda 12|13] [--only PARTS] [--kit-python 3.11,3.12]``

Collects the wheels (``nox -s wheelhouse``), writes the locks and ``SHA256SUMS``, and makes the GPU
check kit (``<out>/gpu-kit``); prints what it made, its size and the offline install commands.
``--only stack-kit`` makes the stack kit instead (``<out>/gpu-stack-kit`` and its bundles
``<out>/gpu-stack-parts/bNN``: the OpenMMLab env for a node with its own CUDA torch; one Python).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .collect import ROOT, collect_env, collect_nox, collect_upstream
from .errors import WheelhouseError
from .requirement_locks import write_sums

PARTS = ("hermetic", "upstream", "nox", "kit", "stack-kit")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="wheelhouse", description=__doc__.split("\n\n")[1])
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "wheelhouse", help="folder (out/wheelhouse)")
    ap.add_argument("--cuda", type=int, choices=(12, 13), default=12, help="CUDA major of the kit's DALI")
    ap.add_argument(
        "--only", default=",".join(PARTS[:4]), help=f"comma list of {', '.join(PARTS)} (default: the first 4)"
    )
    ap.add_argument("--kit-python", default="3.11,3.12", help="Python versions of the kit (3.11,3.12)")
    ap.add_argument(
        "--part-mib", type=int, default=60, help="largest kit part (stack kit: bundle) in MiB (60)"
    )
    ap.add_argument(
        "--cuda-arch", default="9.0", help="stack kit: the node's GPU architecture (9.0: H100/H200)"
    )
    ap.add_argument("--kit-torchvision", help="stack kit: carry this torchvision (a node without one)")
    ap.add_argument(
        "--kit-toolkit",
        action="store_true",
        help="stack kit: carry the whole CUDA toolkit (nvcc, ~100 MB) for a node without one",
    )
    args = ap.parse_args(argv)
    args.only = [p for p in args.only.split(",") if p]
    if unknown := set(args.only) - set(PARTS):
        ap.error(f"--only: unknown {sorted(unknown)} (known: {', '.join(PARTS)})")
    if args.part_mib < 1:
        ap.error("--part-mib must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    t0 = time.monotonic()
    try:
        for env in ("hermetic", "upstream", "nox"):
            if env in args.only:
                started = time.monotonic()
                if env == "upstream":
                    entries = collect_upstream(python, out)
                elif env == "nox":
                    entries = collect_nox(python, out)
                else:  # hermetic: its requirements, then nuscenes-devkit without its pins
                    entries = collect_env(python, out, env) + collect_env(python, out, env, no_deps=True)
                took = time.monotonic() - started
                print(f"{env}: {len(entries)} packages locked ({took:.0f} s)", flush=True)
        if "kit" in args.only:
            from .kit_folder import build_kit, kit_size
            from .kit_wheels import collect_kit

            started = time.monotonic()
            versions = [v.strip() for v in args.kit_python.split(",") if v.strip()]
            locks = collect_kit(python, out, versions, args.cuda)
            kit = build_kit(out, locks, args.cuda, args.part_mib * 2**20)
            files, size = kit_size(kit)
            took = time.monotonic() - started
            print(f"gpu kit: {kit} ({files} files, {size / 2**20:.0f} MiB; {took:.0f} s)", flush=True)
        if "stack-kit" in args.only:
            from .stack_kit import build_stack_kit, describe, git_ignored

            started = time.monotonic()
            versions = [v.strip() for v in args.kit_python.split(",") if v.strip()]
            if len(versions) != 1:
                raise WheelhouseError(
                    f"the stack kit is for one Python (the node's): --kit-python 3.12, not {versions}"
                )
            version = versions[0]
            kit = build_stack_kit(out, version, args.cuda, max_part_bytes=args.part_mib * 2**20,
                                  cuda_arch=args.cuda_arch, torchvision=args.kit_torchvision,
                                  toolkit=args.kit_toolkit)  # fmt: skip
            print(f"stack kit: {kit} ({time.monotonic() - started:.0f} s)\n{describe(kit)}", flush=True)
            if kit.is_relative_to(ROOT) and not git_ignored(kit):
                print(f"  note: git does not ignore {kit}: a lent machine's carry takes ignored folders only")
        write_sums(out)
    except WheelhouseError as exc:
        print(f"wheelhouse: {exc}", file=sys.stderr)
        return 1
    wheels = list(out.glob("*.whl"))
    size = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    print(f"wheelhouse {out}: {len(wheels)} wheels, {size / 2**30:.2f} GiB, {time.monotonic() - t0:.0f} s")
    lock = f"{out}/locks/<env>.txt"
    print(f"  offline env:  pip install --no-index --find-links {out} --require-hashes -r {lock}")
    print(f"  offline nox:  STREAMPETR_WHEELHOUSE={out} nox ...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
