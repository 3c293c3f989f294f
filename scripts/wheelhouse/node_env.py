"""``python -m wheelhouse.node_env --env DIR --torch-from PY --wheelhouse DIR [ops]``: the OpenMMLab
env on a node's own torch, offline, from a stack kit's reassembled wheelhouse (``gpu_check --stack``).

The wheelhouse's source-built entries are put where the env builder's cache looks (mmcv-full's
sdist, the mmdet3d wheel; a rehearsal's mmcv-full wheel), pip is pointed at the folder with the
index disabled, and then:

- where ``upstream_env build`` takes ``--torch-from`` (the GPU-build branch), that builds the env:
  ``python -m upstream_env build --env DIR --torch-from PY --cuda --cuda-arch 9.0 ...``;
- until then the same env is built here, step by step: a venv of the node's python, the kit's lock
  installed with hashes required (``--no-deps`` for its no-deps lock), the node's torch made visible
  through a ``.pth`` file, mmcv-full compiled against it by the env builder's own
  ``ensure_mmcv_wheel`` (``TORCH_CUDA_ARCH_LIST`` from ``--cuda-arch``), the NumPy alias shim and the
  env builder's import check. ``--mmcv-only`` stops after the mmcv-full wheel (the kit's first
  bundle holds what it needs, so it compiles while the other bundles travel).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from .collect import SOURCE_BUILT
from .offline import seed_cache
from .requirement_locks import normalise
from .stack_wheels import EARLY

TORCH_SITE = "import torch, pathlib; print(pathlib.Path(torch.__file__).absolute().parents[1])"  # links kept
NODE_TORCH_PTH = "_node_torch.pth"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="wheelhouse.node_env", description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", type=Path, required=True)
    ap.add_argument("--torch-from", required=True, help="the node's python, whose torch the env uses")
    ap.add_argument("--wheelhouse", type=Path, required=True, help="the reassembled wheels and locks/")
    ap.add_argument("--lock", required=True, help="the stack lock's file name in <wheelhouse>/locks")
    ap.add_argument("--nodeps", required=True, help="the --no-deps lock's file name in <wheelhouse>/locks")
    ops = ap.add_mutually_exclusive_group()
    ops.add_argument("--cuda", dest="cuda", action="store_const", const=True)
    ops.add_argument("--no-cuda", dest="cuda", action="store_const", const=False)
    ap.add_argument(
        "--cuda-arch", default="9.0", help="TORCH_CUDA_ARCH_LIST of a CUDA build (9.0: H100/H200)"
    )
    ap.add_argument("--full-ops", action="store_true", help="every mmcv op, not the reduced set")
    ap.add_argument("--mmcv-only", action="store_true", help="stop after the mmcv-full wheel")
    return ap.parse_args(argv)


def has_torch_from() -> bool:
    """Whether this checkout's env builder builds on a given interpreter's torch (``--torch-from``)."""
    help_text = subprocess.run(
        [sys.executable, "-m", "upstream_env", "build", "--help"], capture_output=True, text=True
    ).stdout
    return "--torch-from" in help_text


def pip(python: Path, *args: object, what: str) -> None:
    from upstream_env import EnvBuildError

    cmd = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise EnvBuildError(f"{what} failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")


def node_torch(python: Path, env_python: Path, on: bool) -> None:
    """The ``.pth`` file that puts the node's torch (its whole site folder, behind the env's own
    packages) on the env's path; ``on=False`` takes it away while pip installs."""
    purelib = subprocess.run(
        [str(env_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    pth = Path(purelib) / NODE_TORCH_PTH
    if not on:
        pth.unlink(missing_ok=True)
        return
    site = subprocess.run([str(python), "-c", TORCH_SITE], check=True, capture_output=True, text=True)
    pth.write_text(site.stdout.strip() + "\n")


def early_requirements(lock: Path, dest: Path) -> Path:
    """The lines of ``lock`` for what mmcv's build imports beside torch (hashes kept)."""
    lines = [ln for ln in lock.read_text().splitlines() if normalise(ln.split("==")[0]) in EARLY]
    dest.write_text("\n".join(lines) + "\n")
    return dest


def build_here(args: argparse.Namespace) -> Path:
    """The env on the node's torch, built step by step (see the module docstring)."""
    from upstream_env.build import IMPORT_CHECK, _install_compat
    from upstream_env.mmcv_wheel import ensure_mmcv_wheel
    from upstream_env.paths import LOG_FILE, env_python
    from upstream_env.runlog import BuildLog

    python, env, locks = Path(args.torch_from), args.env, args.wheelhouse / "locks"
    vpy = env_python(env)
    if not vpy.exists():
        subprocess.run([str(python), "-m", "venv", str(env)], check=True)
    node_torch(python, vpy, on=False)  # pip sees the env's own packages only
    if args.mmcv_only:
        early = early_requirements(locks / args.lock, env / "early.txt")
        pip(
            vpy,
            "--no-deps",
            "--require-hashes",
            "-r",
            early,
            what=f"pip install {', '.join(EARLY)} (offline)",
        )
    else:
        pip(vpy, "--require-hashes", "-r", locks / args.lock, what=f"pip install -r {args.lock} (offline)")
        pip(
            vpy, "--no-deps", "--require-hashes", "-r", locks / args.nodeps, what=f"pip install {args.nodeps}"
        )
    node_torch(python, vpy, on=True)
    if args.cuda:
        os.environ["TORCH_CUDA_ARCH_LIST"] = args.cuda_arch
    log = BuildLog(LOG_FILE, total_steps=1)
    try:
        mmcv_dir = ensure_mmcv_wheel(vpy, log, args.cuda, args.full_ops)
    finally:
        log.close()
    if args.mmcv_only:
        return vpy
    (mmcv,) = mmcv_dir.glob("mmcv_full-*.whl")
    facts = json.loads((locks / SOURCE_BUILT).read_text())
    mmdet3d = args.wheelhouse / facts["mmdet3d"]["file"]
    node_torch(python, vpy, on=False)
    pip(vpy, "--no-deps", mmcv, mmdet3d, what="pip install mmcv-full and mmdet3d (--no-deps)")
    node_torch(python, vpy, on=True)
    _install_compat(vpy)
    check = subprocess.run([str(vpy), "-c", IMPORT_CHECK], capture_output=True, text=True)
    if check.returncode != 0:
        from upstream_env import EnvBuildError

        raise EnvBuildError(f"import check of {env} failed:\n{check.stderr[-3000:]}")
    print(check.stdout.strip(), flush=True)
    return vpy


def main(argv: list[str] | None = None) -> int:
    from upstream_env import EnvBuildError

    args = parse_args(argv)
    seeded = seed_cache(args.wheelhouse)  # the parts were verified against the kit's manifest
    os.environ.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(args.wheelhouse), PIP_CONFIG_FILE=os.devnull)
    print(
        f"node_env: wheel cache seeded with {len(seeded)} entries; the package index is disabled", flush=True
    )
    if has_torch_from() and not args.mmcv_only:
        ops = ["--cuda", "--cuda-arch", args.cuda_arch] if args.cuda else ["--no-cuda"] * (args.cuda is False)
        ops += ["--full-ops"] if args.full_ops else []
        cmd = [sys.executable, "-m", "upstream_env", "build", "--env", str(args.env), "--torch-from",
               args.torch_from, *ops]  # fmt: skip
        print("node_env: $", " ".join(cmd), flush=True)
        return subprocess.run(cmd).returncode
    print(
        "node_env: building the env here (upstream_env build has no --torch-from in this checkout)",
        flush=True,
    )
    try:
        build_here(args)
    except EnvBuildError as exc:
        print(f"node_env: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
