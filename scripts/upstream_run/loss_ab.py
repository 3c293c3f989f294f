"""Two training runs of the same seed side by side:
``python -m upstream_run.loss_ab LABEL=WORK_DIR LABEL=WORK_DIR [--out PNG]``.

Reads each work dir's newest ``*.log.json`` (:func:`.check_run.log_records`), prints per loss the
largest relative difference between the runs at the same iteration (``|a - b| / max(|a|, |b|)``),
and draws the total loss of both against the iteration (``--out``). Runs in either env (matplotlib).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .check_run import log_records


def loss_series(records: list[dict]) -> dict[str, dict[int, float]]:
    """``{loss key: {iteration: value}}`` of the training records."""
    out: dict[str, dict[int, float]] = {}
    for r in records:
        if r.get("mode") != "train":
            continue
        for key, value in r.items():
            if "loss" in key and isinstance(value, float):
                out.setdefault(key, {})[int(r["iter"])] = value
    return out


def largest_relative_differences(a: dict[str, dict[int, float]], b: dict[str, dict[int, float]]) -> dict:
    """Per loss key both runs logged: ``(largest relative difference, its iteration)``."""
    out = {}
    for key in sorted(a.keys() & b.keys()):
        common = sorted(a[key].keys() & b[key].keys())
        if not common:
            continue
        rel = [(abs(a[key][i] - b[key][i]) / max(abs(a[key][i]), abs(b[key][i]), 1e-12), i) for i in common]
        out[key] = max(rel)
    return out


def chart(runs: dict[str, dict[str, dict[int, float]]], path: Path, key: str = "loss") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=80)
    for (label, series), marker in zip(runs.items(), "os^v", strict=False):
        points = sorted(series.get(key, {}).items())
        ax.plot([i for i, _ in points], [v for _, v in points], marker=marker, label=label, linewidth=1)
    ax.set_xlabel("iteration")
    ax.set_ylabel(f"training {key}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m upstream_run.loss_ab", description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs=2, metavar="LABEL=WORK_DIR")
    ap.add_argument("--out", type=Path, help="PNG of the total loss of both runs")
    args = ap.parse_args(argv)
    runs = {}
    for text in args.runs:
        label, sep, work_dir = text.partition("=")
        if not sep or not label:
            ap.error(f"{text!r}: expected LABEL=WORK_DIR")
        runs[label] = loss_series(log_records(Path(work_dir)))
    (la, a), (lb, b) = runs.items()
    diffs = largest_relative_differences(a, b)
    if not diffs:
        raise SystemExit(f"loss_ab: {la} and {lb} logged no loss at a common iteration")
    for key, (rel, it) in diffs.items():
        print(f"{key}: largest relative difference {rel:.4f} at iteration {it}")
    if args.out:
        chart(runs, args.out)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
