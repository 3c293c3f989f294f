"""CLI: `python -m equivalence [--config r50|vov|petrv1|8key|PATH ... | --all-upstream-configs]
[--data-root DIR] [--batches N] [--out DIR]`.

Prints a table per config and writes `<out>/equivalence.json`; exit status 1 when any tolerance is
exceeded (2 on a usage error). `--all-upstream-configs` runs every training config of the pinned
checkout's projects/configs/ and ends with one row per config: its training mode and PASS, FAIL or
"refused: <reason>" (a config the DALI loader refuses by name counts as handled)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .original import CHECKOUT, CONFIGS, DEFAULT_CONFIGS, REPO_ROOT, import_upstream
from .report import config_table, render, verdict_counts, write_json


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="equivalence", description=__doc__)
    ap.add_argument("--config", action="append", help=f"{' | '.join(CONFIGS)} | a config path (repeatable;"
                    " default: r50 and vov)")  # fmt: skip
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
    import_upstream()
    from .harness import run_config, upstream_training_configs

    if args.split == "test":
        return main_test_split(args, upstream_training_configs(CHECKOUT))

    records = []
    configs = (
        upstream_training_configs(CHECKOUT) if args.all_upstream_configs else args.config or DEFAULT_CONFIGS
    )
    for config in configs:
        print(f"equivalence: {config} on {args.data_root}", flush=True)
        record = run_config(
            config, args.data_root.resolve(), batches=args.batches, seed=args.seed,
            samples_per_gpu=args.batch_size, sequence_iters=args.sequence_iters, draws=args.draws,
        )  # fmt: skip
        records.append(record)
        print((f"refused: {record['refused']}" if "refused" in record else render(record)) + "\n", flush=True)
    if args.all_upstream_configs:
        print(config_table(records) + "\n")
    out = args.out / "equivalence.json"
    write_json(records, out)
    ok = all(r["ok"] for r in records)
    print(f"equivalence: {'PASS' if ok else 'FAIL'}: {verdict_counts(records)}; wrote {out}")
    return 0 if ok else 1


def main_test_split(args: argparse.Namespace, all_configs: list[str]) -> int:
    """``--split test``: :func:`.eval_split.compare_test_split` per config."""
    from .eval_split import compare_test_split, render_test_split

    records = []
    for config in all_configs if args.all_upstream_configs else args.config or DEFAULT_CONFIGS:
        print(f"equivalence (test split): {config} on {args.data_root}", flush=True)
        record = compare_test_split(config, args.data_root.resolve())
        records.append(record)
        print(render_test_split(record) + "\n", flush=True)
    out = args.out / "equivalence_test.json"
    write_json(records, out)
    ok = all(r["ok"] for r in records)
    names = ", ".join(r["config"] for r in records)
    print(f"equivalence (test split): {'PASS' if ok else 'FAIL'} ({names}); wrote {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
