"""Check the per-rank slot logs of a DALI training run:
`python -m upstream_env.slots WORK_DIR [--replicate-dataset-per-gpu]`.

Each rank writes `slots_rank<r>.jsonl` (one line per iteration: the scene, token and data set index
every batch slot received). By default the ranks share out the sequence groups, so their streams
must be disjoint (no two slots of the global batch on the same frame in an iteration); with
`replicate_dataset_per_gpu` every rank walks the whole data set, so (without `offset_order_per_rank`)
all ranks receive the same stream.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def read_logs(work_dir: Path) -> dict[int, list[dict]]:
    """rank -> iteration records, from every `slots_rank*.jsonl` in `work_dir`."""
    logs = {}
    for path in sorted(work_dir.glob("slots_rank*.jsonl")):
        rank = int(path.stem.removeprefix("slots_rank"))
        logs[rank] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return logs


def streams(records: list[dict]) -> list[list[int]]:
    """Per batch slot, the data set indices it received, in iteration order."""
    return [list(s) for s in zip(*([slot["index"] for slot in r["slots"]] for r in records), strict=True)]


def split_name(replicate_dataset_per_gpu: bool) -> str:
    return "replicate_dataset_per_gpu" if replicate_dataset_per_gpu else "sharded"


def problems(logs: dict[int, list[dict]], replicate_dataset_per_gpu: bool) -> list[str]:
    """What contradicts the expected split in the logs (empty when the split is as expected)."""
    if not logs:
        return ["no slots_rank*.jsonl written (is data_loading_config.log_slots on?)"]
    found = []
    if not replicate_dataset_per_gpu:
        for i in range(min(len(r) for r in logs.values())):
            indices = [slot["index"] for records in logs.values() for slot in records[i]["slots"]]
            if len(set(indices)) != len(indices):
                found.append(f"iteration {i}: two slots of the global batch got the same frame {indices}")
    else:
        (first_rank, first), *rest = sorted((rank, streams(records)) for rank, records in logs.items())
        found += [f"rank {r} stream differs from rank {first_rank}" for r, s in rest if s != first]
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m upstream_env.slots", description=__doc__)
    ap.add_argument("work_dir", type=Path, help="the run's work dir, holding slots_rank<r>.jsonl")
    ap.add_argument("--replicate-dataset-per-gpu", action="store_true", help="the run set this key")
    args = ap.parse_args(argv)
    logs = read_logs(args.work_dir)
    for rank, records in sorted(logs.items()):
        for j, stream in enumerate(streams(records)):
            scenes = [s["scene"][:6] for s in (r["slots"][j] for r in records)]
            print(f"train_dali: rank {rank} slot {j}: frames {stream} scenes {scenes}")
    split = split_name(args.replicate_dataset_per_gpu)
    bad = problems(logs, args.replicate_dataset_per_gpu)
    if bad:
        print(f"train_dali: slot split is not {split}:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print(f"train_dali: {len(logs)} rank(s), split checked: {split}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
