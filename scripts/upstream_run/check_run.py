"""Check a finished `tools/train.py` run:
`python -m upstream_run.check_run WORK_DIR ITERS [LABEL] [--validated]`.

Runs in the upstream env (needs torch). Reads the newest `*.log.json` mmcv's
TextLoggerHook wrote (the last segment of a resumed run), fails on a missing iteration or a
non-finite loss, prints the timing summary, and loads the final checkpoint as mmcv loads a local
file to check its meta holds CLASSES. With `--validated` the log must also hold an evaluation with finite
mAP and NDS (printed).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path


def log_records(work_dir: Path) -> list[dict]:
    """The records of the newest json log in `work_dir`."""
    logs = sorted(work_dir.glob("*.log.json"), key=lambda p: p.stat().st_mtime)
    if not logs:
        raise SystemExit(f"check_run: no *.log.json in {work_dir}")
    return [json.loads(line) for line in logs[-1].read_text().splitlines() if line.strip()]


def evaluation(records: list[dict]) -> dict[str, float]:
    """mAP and NDS of the last evaluation in the log ({} when none was logged)."""
    found: dict[str, float] = {}
    for record in records:
        if record.get("mode") == "val":
            for key, value in record.items():
                name = key.rsplit("/", 1)[-1]
                if name in ("mAP", "NDS"):
                    found[name] = value
    return found


def non_finite(records: list[dict]) -> list[str]:
    """`iter N: key=value` for every loss that is NaN or infinite."""
    return [
        f"iter {r['iter']}: {key}={value}"
        for r in records
        for key, value in r.items()
        if "loss" in key and isinstance(value, float) and not math.isfinite(value)
    ]


def summary(records: list[dict]) -> str:
    """Median time and data time per iteration, leaving out the first (warm-up) when there are more."""
    steady = records[1:] if len(records) > 1 else records
    t = statistics.median(r["time"] for r in steady)
    d = statistics.median(r["data_time"] for r in steady)
    last = records[-1]
    return (
        f"{len(records)} iterations; median {t:.2f} s/iter (data {d:.2f} s) over iters "
        f"{steady[0]['iter']}-{last['iter']}; first iteration {records[0]['time']:.2f} s; "
        f"final loss {last.get('loss', float('nan')):.4f}"
    )


def check_checkpoint(path: Path) -> str:
    """Load `path` as mmcv's loader loads a local file (`torch.load` with torch's defaults:
    `weights_only=True`), memory-mapped; return a description, raise if CLASSES is missing. torch
    alone, not mmcv's runner, whose import pulls torchvision and torch._dynamo (9.7 s against 3.6)."""
    import torch

    ckpt = torch.load(str(path), map_location="cpu", mmap=True)
    classes = ckpt.get("meta", {}).get("CLASSES")
    if not classes:
        raise SystemExit(f"check_run: {path} has no meta['CLASSES']")
    return f"{path.name}: {len(ckpt['state_dict'])} tensors, CLASSES = {', '.join(classes)}"


def main(argv: list[str]) -> int:
    validated = "--validated" in argv
    argv = [a for a in argv if a != "--validated"]
    work_dir, iters = Path(argv[0]), int(argv[1])
    label = argv[2] if len(argv) > 2 else "train"
    logged = log_records(work_dir)
    records = [r for r in logged if r.get("mode") == "train"]
    if not records:
        print(f"check_run: no training iterations logged in {work_dir}", file=sys.stderr)
        return 1
    bad = non_finite(records)
    if bad:
        print("check_run: NON-FINITE LOSS\n  " + "\n  ".join(bad[:10]), file=sys.stderr)
        return 1
    if records[-1]["iter"] != iters:
        print(f"check_run: last logged iteration is {records[-1]['iter']}, expected {iters}", file=sys.stderr)
        return 1
    print(f"{label}: {summary(records)}; all losses finite")
    print(f"{label}: checkpoint {check_checkpoint(work_dir / f'iter_{iters}.pth')}")
    if validated:
        metrics = evaluation(logged)
        if set(metrics) != {"mAP", "NDS"} or not all(math.isfinite(v) for v in metrics.values()):
            print(
                f"check_run: no finite mAP/NDS logged by the evaluation hook (found {metrics})",
                file=sys.stderr,
            )
            return 1
        print(f"{label}: validation mAP {metrics['mAP']:.4f}, NDS {metrics['NDS']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
