"""``python -m slurm_local install``: install slurm-wlm and munge with apt-get when a SLURM program
is missing (root, Debian/Ubuntu); exit status 0 when they are (now) installed, else 1 with one line
saying why not. ``nox -s tests`` runs it before the tiers; ``nox -s slurm_smoke`` calls the same
function (:func:`.programs.ensure_installed`).
"""

from __future__ import annotations

import argparse
import sys

from .programs import SlurmUnavailable, ensure_installed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="slurm_local", description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("install",))
    ap.parse_args(argv)
    try:
        ensure_installed()
    except SlurmUnavailable as exc:
        print(f"slurm_local: {exc}", file=sys.stderr)
        return 1
    print("slurm_local: SLURM and munge are installed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
