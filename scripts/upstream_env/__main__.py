"""CLI: `python -m upstream_env {build,mmcv-wheel,path} ...` (`<command> --help` for each). The runs of
upstream's tools inside the env (train, evaluate, create_data) are the `upstream_run` package."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpukit import CheckError

from .build import build, is_current, read_stamp
from .cuda_toolkit import DEFAULT_ARCHES, MODES, parse_arch_list
from .errors import EnvBuildError
from .paths import ENV_DIR, env_python


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="upstream_env", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build or update the env (a no-op when it is current)")
    add_choices(b)
    b.add_argument(
        "--force",
        action="store_true",
        help="rerun the install steps even when the stamp is current (after the jobs running from the "
        "env end, as every build that changes it)",
    )
    b.add_argument(
        "--clean",
        action="store_true",
        help="delete the env first, once the jobs running from it end (cached wheels are kept)",
    )
    b.add_argument(
        "--beside",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module the session runs in the env anyway (synthdata): a build installs numpy and Pillow, "
        "then runs `python -m MODULE` beside its steps from torch's install on; a failure is logged",
    )
    m = sub.add_parser(
        "mmcv-wheel",
        help="only the cached mmcv-full wheel `build` with these choices installs (made or reused), "
        "with the venv and build prerequisites it needs; prints its folder",
    )
    add_choices(m)
    p = sub.add_parser("path", help="print the env's python; exit 1 when the env is not built/current")
    p.add_argument("--env", type=Path, default=ENV_DIR)
    args = parser.parse_args(argv)
    if args.command == "path":
        print(env_python(args.env))
        return 0 if is_current(args.env) else 1
    stamp = read_stamp(args.env)  # the choices are kept across --clean
    flags = {k: getattr(args, k) for k in ("cuda", "full_ops", "arch_list", "toolkit", "torch_from")}
    recorded = {k: v for k, v in (stamp or {}).items() if k in flags and flags[k] is None}
    chosen = {**recorded, **{k: v for k, v in flags.items() if v is not None}}
    try:
        if args.command == "mmcv-wheel":
            print(build(args.env, mmcv_only=True, **chosen))
        else:
            build(args.env, force=args.force, clean=args.clean, beside=args.beside, **chosen)
    except (EnvBuildError, CheckError) as exc:  # CheckError: gpukit's probe of a torch
        print(f"upstream_env: {exc}", file=sys.stderr)
        return 1
    return 0


def add_choices(b: argparse.ArgumentParser) -> None:
    """The env folder and the build choices (`build.Choices`), shared by `build` and `mmcv-wheel`."""
    b.add_argument("--env", type=Path, default=ENV_DIR, help="env folder (default: .nox/_env/upstream)")
    ops = b.add_mutually_exclusive_group()
    ops.add_argument(
        "--cuda",
        dest="cuda",
        action="store_const",
        const=True,
        help="compile mmcv CUDA ops (kept for later builds; auto: when the env's torch sees a GPU)",
    )
    ops.add_argument("--no-cuda", dest="cuda", action="store_const", const=False, help="CPU ops only")
    op_set = b.add_mutually_exclusive_group()
    op_set.add_argument(
        "--full-ops",
        dest="full_ops",
        action="store_const",
        const=True,
        help="compile every mmcv op, not only those StreamPETR calls (kept for later builds)",
    )
    op_set.add_argument(
        "--reduced-ops",
        dest="full_ops",
        action="store_const",
        const=False,
        help="only the ops StreamPETR calls on the CPU, or reaches on CUDA (the default); the others "
        "raise a named error",
    )
    b.add_argument(
        "--cuda-arch",
        "--arch-list",
        dest="arch_list",
        type=_arch_list,
        help=f"CUDA arch list, e.g. '9.0' or '8.0;9.0' (default {';'.join(DEFAULT_ARCHES)}; kept)",
    )
    b.add_argument(
        "--toolkit",
        choices=MODES,
        help="where nvcc comes from: auto (the system's when its CUDA release is torch's, else the "
        "index's), index (the hash-locked toolkit wheels), system (nvcc on PATH or $CUDA_HOME); kept",
    )
    b.add_argument(
        "--torch-from",
        metavar="PYTHON",
        help="build the env on this interpreter's torch (a GPU node's own), not the constraints' torch",
    )


def _arch_list(text: str) -> tuple[str, ...]:
    try:
        return parse_arch_list(text)
    except EnvBuildError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


if __name__ == "__main__":
    sys.exit(main())
