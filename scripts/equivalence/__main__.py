"""CLI: `python -m equivalence [--config r50|vov|petrv1|8key|PATH ... | --all-upstream-configs]
[--split train|test] [--data-root DIR] [--add-info-key KEY] [--batches N] [--out DIR]`.

Prints a table per config, then one row per config, and writes `<out>/equivalence.json`
(`equivalence_test.json` for `--split test`). `--all-upstream-configs` runs every config under
projects/configs/ of the applied checkout (where the fork's layout and `overlay_moves` put it). Each
row is PASS, FAIL, "refused: <reason>" (a config the DALI loader refuses by name counts as handled),
"skipped: <rule>" (no training config) or "not comparable: <exception> (<file:line>)" (the run goes
on). Exit status 1 when a tolerance is exceeded or a config is not comparable, 2 on a usage error
or a checkout the harness cannot use."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from overlaytool import OverlayError

from .configs import upstream_configs
from .original import CONFIGS, DEFAULT_CONFIGS, REPO_ROOT, import_upstream, read_config, streampetr_target
from .sweep import sweep
from .verdict import config_table, render, verdict, verdict_counts


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="equivalence", description=__doc__)
    ap.add_argument("--config", action="extend", nargs="+", metavar="NAME",
                    help=f"{' | '.join(CONFIGS)} | a config path; several after one --config, or --config "
                    "repeated (default: r50 and vov)")  # fmt: skip
    ap.add_argument("--all-upstream-configs", action="store_true",
                    help="every training config of the pin (projects/configs/), one row each")  # fmt: skip
    ap.add_argument("--data-root", type=Path, help="folder with nuscenes2d_temporal_infos_train.pkl "
                    "(default: the embedded synthetic data set)")  # fmt: skip
    ap.add_argument("--batches", type=int, default=4, help="batches compared per config (default 4)")
    ap.add_argument("--batch-size", type=int, help="samples per batch (default: the config's)")
    ap.add_argument("--seed", type=int, help="default: the first seed covering flip x padding")
    ap.add_argument("--draws", type=int, default=2000, help="draws per side for the distribution tests")
    ap.add_argument("--sequence-iters", type=int, default=24, help="iterations of the sampler comparison")
    ap.add_argument("--split", choices=("train", "test"), default="train",
                    help="test: the test loader against upstream's test DataLoader (tools/test.py), on 1, "
                    "2 and 3 ranks")  # fmt: skip
    ap.add_argument("--add-info-key", action="append", default=[], metavar="KEY",
                    help="compare on a copy of the data set whose infos carry KEY, which a fork's data set "
                    "reads (known: instance_inds)")  # fmt: skip
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "out" / "equivalence")
    args = ap.parse_args(argv)
    if args.batches < 1:
        ap.error("--batches must be >= 1")
    if args.all_upstream_configs and args.config:
        ap.error("--all-upstream-configs and --config exclude each other")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.data_root is None:
        from synthdata import ensure_dataset

        args.data_root = ensure_dataset()
    try:
        import_upstream()
        configs = upstream_configs(streampetr_target()) if args.all_upstream_configs else None
    except (OverlayError, FileNotFoundError) as exc:
        print(f"equivalence: {exc}", file=sys.stderr)
        return 2
    data_root = args.data_root.resolve()
    if args.add_info_key:
        from .info_keys import InfoKeyError, with_info_keys

        try:
            data_root = with_info_keys(data_root, args.add_info_key, args.out.resolve())
        except InfoKeyError as exc:
            print(f"equivalence: {exc}", file=sys.stderr)
            return 2
    configs = configs if configs is not None else args.config or list(DEFAULT_CONFIGS)
    if args.split == "test":
        from .eval_split import compare_test_split, render_test_split

        compare = functools.partial(compare_test_split, data_root=data_root)
        render_one, out = render_test_split, args.out / "equivalence_test.json"
    else:
        from .harness import run_config

        compare = functools.partial(
            run_config, data_root=data_root, batches=args.batches, seed=args.seed,
            samples_per_gpu=args.batch_size, sequence_iters=args.sequence_iters, draws=args.draws,
        )  # fmt: skip
        render_one, out = render, args.out / "equivalence.json"
    records = sweep(
        configs, compare, read_config, split=args.split, data_root=data_root, out=out, render=render_one
    )
    print(config_table(records) + "\n")
    ok = all(r["ok"] for r in records)
    print(f"equivalence ({args.split} split): {verdict(records)}: {verdict_counts(records)}; wrote {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
