"""``python -m wheelhouse [--out DIR] [--only PARTS]``

Collects the wheels (``nox -s wheelhouse``), writes the locks and ``SHA256SUMS``; prints what it
made, its size and the offline install commands. The GPU kits: ``python -m gpu_kits``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .collect import ROOT, Wheelhouse, collect_env, collect_nox, collect_upstream
from .requirement_locks import WheelhouseError, write_sums

PARTS = ("hermetic", "upstream", "nox")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="wheelhouse", description=__doc__.split("\n\n")[1])
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "wheelhouse", help="folder (out/wheelhouse)")
    ap.add_argument("--only", default=",".join(PARTS), help=f"comma list of {', '.join(PARTS)} (all)")
    args = ap.parse_args(argv)
    args.only = [p for p in args.only.split(",") if p]
    if unknown := set(args.only) - set(PARTS):
        ap.error(f"--only: unknown {sorted(unknown)} (known: {', '.join(PARTS)}; GPU kits: nox -s gpu_kits)")
    out, t0 = args.out.resolve(), time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    house = Wheelhouse(sys.executable, out)
    try:
        for env in [p for p in PARTS if p in args.only]:
            started = time.monotonic()
            if env == "upstream":
                entries = collect_upstream(house)
            elif env == "nox":
                entries = collect_nox(house)
            else:  # hermetic: its requirements, then nuscenes-devkit without its pins
                entries = collect_env(house, env) + collect_env(house, env, no_deps=True)
            print(f"{env}: {len(entries)} packages locked ({time.monotonic() - started:.0f} s)", flush=True)
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
