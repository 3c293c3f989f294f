"""CLI: `python -m upstream_run {train,evaluate,create_data,slurm_smoke} ...`; each parses its arguments."""

from __future__ import annotations

import importlib
import sys

COMMANDS = ("train", "evaluate", "create_data", "slurm_smoke")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print(
            f"usage: python -m upstream_run {{{','.join(COMMANDS)}}} ... (<command> --help)", file=sys.stderr
        )
        return 2
    return importlib.import_module(f".{argv[0]}", __package__).main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
