"""Command line: `python -m forkwatch {watch,vet}` (behind `nox -s watch` and `nox -s rebase -- --check
<commit> --train`).

watch: exit 0 when the state of every source is what the previous summary recorded (or there is
none), 1 when it changed, 2 on bad input. vet: exit 0 when every step passed, 1 when one failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from overlaytool import REPO_ROOT, cache_root
from upstream_env import env_python

from .errors import ForkwatchError
from .vet import VetSettings, passed, step_lines, vet
from .watch import load_sources, watch
from .watch_summary import JSON_NAME, make_summary, read_summary, write_summary


def settings_of(args: argparse.Namespace) -> VetSettings:
    """The vetting's env python and data set (the embedded synthetic one unless `--data-root`)."""
    python = args.python
    if not python.exists():
        raise ForkwatchError(f"no OpenMMLab env at {python}: `nox -s upstream_env` builds it")
    data_root = args.data_root
    if data_root is None:
        code = "from synthdata import ensure_dataset; print(ensure_dataset())"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(str(args.root / p) for p in ("scripts", "overlay")),
        }
        done = subprocess.run([str(python), "-c", code], env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ForkwatchError(f"cannot make the synthetic data set: {done.stderr.strip()[-800:]}")
        data_root = Path(done.stdout.strip().splitlines()[-1])
    return VetSettings(python, data_root.resolve(), args.iters, args.config)


def cmd_vet(args: argparse.Namespace) -> int:
    where = f" from {args.source}" if args.source else ""
    print(f"vet: {args.ref}{where} in a throw-away copy of the project", flush=True)
    steps = vet(args.root, args.ref, args.source, settings_of(args), cache_root(), args.scratch)
    print("\n".join(step_lines(steps)))
    ok = passed(steps)
    print("vet: every step passed" if ok else "vet: a step failed; the project was not changed")
    return 0 if ok else 1


def cmd_watch(args: argparse.Namespace) -> int:
    sources = load_sources(args.sources or args.root / "upstream" / "forks.toml")
    out = args.out or args.root / "out" / "watch"
    previous_path = args.previous or out / JSON_NAME
    prior = read_summary(previous_path)  # before this run's summary replaces it
    settings = settings_of(args) if args.train else None
    pin, entries = watch(args.root, cache_root(), sources, settings)
    summary = make_summary(pin, entries, args.train, previous_path, prior)
    json_path, md_path = write_summary(summary, out)
    for entry in entries:
        stop = entry["would_stop"]
        what = f" ({stop['kind']} in {stop.get('patch') or 'the finish'})" if stop else ""
        vetted = "" if entry["vet"] is None else f", vetting {'passes' if entry['vet']['ok'] else 'FAILS'}"
        print(f"{entry['name']}: {entry['state']}{what}{vetted}")
    print(f"summary: {md_path} and {json_path.name}")
    if prior is None:
        print(f"no previous summary at {previous_path}: this run is the baseline")
        return 0
    if summary["changed"]:
        print("changed since the previous summary:\n  " + "\n  ".join(summary["changes"]))
        return 1
    print("no change of state since the previous summary")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="forkwatch", description=__doc__)
    parser.add_argument("--root", type=lambda s: Path(s).resolve(), default=REPO_ROOT, help="project root")
    sub = parser.add_subparsers(dest="command", required=True)
    training = argparse.ArgumentParser(add_help=False)
    training.add_argument("--python", type=Path, default=env_python(), help="the OpenMMLab env's python")
    training.add_argument("--data-root", type=Path, help="data set (default: the embedded synthetic one)")
    training.add_argument("--iters", type=int, default=1, help="training iterations (default 1)")
    training.add_argument("--config", default="smoke", help="upstream_run train's --config (default smoke)")
    p = sub.add_parser("vet", parents=[training], help="rebase, apply, load configs, train: in a copy")
    p.add_argument("ref", help="the commit (or branch of --from / of the pinned URL) to vet")
    p.add_argument("--from", dest="source", metavar="PATH_OR_URL", help="where the commit comes from")
    p.add_argument("--scratch", type=Path, help="folder for the throw-away copy (default: the temp dir)")
    p.set_defaults(func=cmd_vet)
    p = sub.add_parser("watch", parents=[training], help="check (and vet) every listed source; one summary")
    p.add_argument("--train", action="store_true", help="vet every source whose series carries over")
    p.add_argument("--sources", type=Path, help="the sources file (default: <root>/upstream/forks.toml)")
    p.add_argument("--out", type=Path, help="where the summary goes (default: <root>/out/watch)")
    p.add_argument("--previous", type=Path, help=f"the summary to compare with (default: <out>/{JSON_NAME})")
    p.set_defaults(func=cmd_watch)
    args = parser.parse_args(argv)
    if args.iters < 1:
        parser.error("--iters must be >= 1")
    try:
        return args.func(args)
    except ForkwatchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
