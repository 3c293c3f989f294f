"""Make StreamPETR's info pickles from a nuScenes tree with its own converter (`nox -s create_data`).

Calls `nuscenes_data_prep` of `tools/create_data_nusc.py` in the applied checkout (upstream's converter,
unchanged) with the upstream env's python, for exactly the version asked for (upstream's own
`--version v1.0` converts trainval and test together and needs both), and writes
`nuscenes2d_temporal_infos_{train,val}.pkl` (`_test.pkl` for v1.0-test) into `--out` (default: the root).
The paths inside are absolute: the converter shortens paths under its working directory, so it runs in
an empty temporary one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from overlaytool import require_code_root
from upstream_env import env_python

PREFIX = "nuscenes2d"
SPLITS = {"v1.0-mini": ("train", "val"), "v1.0-trainval": ("train", "val"), "v1.0-test": ("test",)}
# create_data_nusc.py parses sys.argv when imported: hand it none, then call its function.
DRIVER = (
    "import sys; root, prefix, version, sweeps = sys.argv[1:]; del sys.argv[1:]; "
    "import create_data_nusc; create_data_nusc.nuscenes_data_prep("
    "root_path=root, info_prefix=prefix, version=version, max_sweeps=int(sweeps))"
)


class CreateDataError(Exception):
    """A user-facing failure: the message names the folder or file and what to do."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="upstream_run create_data", description=__doc__)
    ap.add_argument(
        "--root", type=Path, required=True, help="the nuScenes folder (v1.0-*/, samples/, sweeps/)"
    )
    ap.add_argument("--version", choices=sorted(SPLITS), required=True, help="the table set to convert")
    ap.add_argument("--out", type=Path, help="where the info pickles go (default: --root)")
    ap.add_argument("--max-sweeps", type=int, default=10, help="lidar sweeps per sample (upstream: 10)")
    ap.add_argument("--python", type=Path, default=env_python(), help="the upstream env's python")
    args = ap.parse_args(argv)
    args.root = args.root.resolve()
    args.out = (args.out or args.root).resolve()
    return args


def outputs(out: Path, version: str) -> list[Path]:
    """The info pickles the converter writes for `version` into `out`."""
    return [out / f"{PREFIX}_temporal_infos_{split}.pkl" for split in SPLITS[version]]


def check_root(root: Path, version: str) -> None:
    """Fail early, naming the folder, when `root` cannot be the nuScenes tree for `version`."""
    tables = root / version
    if not (tables / "scene.json").is_file():
        found = sorted(p.name for p in root.glob("v1.0-*")) if root.is_dir() else []
        raise CreateDataError(
            f"{tables}: no nuScenes tables (scene.json); --root must hold {version}/, samples/ and sweeps/"
            + (f" (found: {', '.join(found)})" if found else "")
        )


def converter_command(args: argparse.Namespace) -> list[str]:
    prefix = str(args.out / PREFIX)  # absolute: the converter's os.path.join(root, prefix) keeps it
    return [str(args.python), "-c", DRIVER, str(args.root), prefix, args.version, str(args.max_sweeps)]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tools = require_code_root("upstream_run") / "tools"
    try:
        if not (tools / "create_data_nusc.py").exists():
            raise CreateDataError(f"{tools} has no create_data_nusc.py, StreamPETR's converter")
        check_root(args.root, args.version)
        args.out.mkdir(parents=True, exist_ok=True)
        print(f"$ (tools/create_data_nusc.py) nuscenes_data_prep({args.root}, {args.out / PREFIX}, "
              f"{args.version}, max_sweeps={args.max_sweeps})", file=sys.stderr, flush=True)  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="create_data-") as cwd:
            env = {**os.environ, "PYTHONPATH": str(tools)}
            code = subprocess.run(converter_command(args), cwd=cwd, env=env).returncode
        if code != 0:
            raise CreateDataError(f"StreamPETR's converter failed (exit {code}) on {args.root}")
        missing = [str(p) for p in outputs(args.out, args.version) if not p.is_file()]
        if missing:
            raise CreateDataError(f"the converter did not write {', '.join(missing)}")
    except CreateDataError as exc:
        print(f"upstream_run create_data: {exc}", file=sys.stderr)
        return 1
    for path in outputs(args.out, args.version):
        print(f"create_data: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    if args.out != args.root:
        keys = "data.train.ann_file / data.val.ann_file / data.test.ann_file"
        print(f"create_data: configs take them as {keys} (data_root stays {args.root}/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
