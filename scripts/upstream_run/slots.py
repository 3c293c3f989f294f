"""Check the per-rank slot logs of a DALI training run:
`python -m upstream_run.slots WORK_DIR [--replicate-dataset-per-gpu]`.

Each rank writes `slots_rank<r>.jsonl` (one line per iteration: the scene, token, data set index,
augmentation draw and image checksum every batch slot received); a resumed run appends to it, and
an iteration logged by two segments must be identical in both. By default the ranks share out the
sequence groups, so their streams must be disjoint (no two slots of the global batch on the same
frame in an iteration); with `replicate_dataset_per_gpu` every rank walks the whole data set, so
(without `offset_order_per_rank`) all ranks receive the same stream.
`python -m upstream_run.slots --compare DIR_A DIR_B` checks that two runs (e.g. straight and
resumed) gave every slot the same frame, draw and pixels at every iteration.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


class SlotLogError(ValueError):
    """A slot log that contradicts itself: a gap, or one iteration logged differently twice."""


def merge_segments(records: list[dict], path: Path) -> list[dict]:
    """One record per iteration, in order, from the records of all run segments. An iteration
    logged twice (a killed run logged it after its last checkpoint; the resumed run
    runs it again) must be identical both times."""
    by_iter: dict[int, dict] = {}
    for record in records:
        seen = by_iter.setdefault(record["iter"], record)
        if seen != record:
            raise SlotLogError(f"{path}: iteration {record['iter']} was logged twice with different slots")
    iters = sorted(by_iter)
    if iters != list(range(len(iters))):
        missing = sorted(set(range(iters[-1] + 1)) - set(iters)) if iters else []
        raise SlotLogError(f"{path}: iterations missing from the slot log: {missing[:10]}")
    return [by_iter[i] for i in iters]


def read_logs(work_dir: Path) -> dict[int, list[dict]]:
    """rank -> one record per iteration, from every `slots_rank*.jsonl` in `work_dir`."""
    logs = {}
    for path in sorted(work_dir.glob("slots_rank*.jsonl")):
        rank = int(path.stem.removeprefix("slots_rank"))
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        logs[rank] = merge_segments(records, path)
    return logs


def differences(a: dict[int, list[dict]], b: dict[int, list[dict]]) -> list[str]:
    """Where two runs' slot logs differ: ranks, iteration counts, then per (rank, iteration, slot)
    the first field that differs (scene, token, index, prev_exists, draw, img_sha1)."""
    if sorted(a) != sorted(b):
        return [f"ranks differ: {sorted(a)} vs {sorted(b)}"]
    found = []
    for rank in sorted(a):
        if len(a[rank]) != len(b[rank]):
            found.append(f"rank {rank}: {len(a[rank])} vs {len(b[rank])} iterations")
        for ra, rb in zip(a[rank], b[rank], strict=False):
            for j, (sa, sb) in enumerate(zip(ra["slots"], rb["slots"], strict=True)):
                field = next((k for k in sa if sa[k] != sb.get(k)), None)
                if field:
                    found.append(
                        f"rank {rank} iteration {ra['iter']} slot {j}: {field} {sa[field]} vs {sb[field]}"
                    )
    return found


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
    ap = argparse.ArgumentParser(prog="python -m upstream_run.slots", description=__doc__)
    ap.add_argument("work_dir", type=Path, nargs="?", help="the run's work dir, holding slots_rank<r>.jsonl")
    ap.add_argument("--replicate-dataset-per-gpu", action="store_true", help="the run set this key")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("DIR_A", "DIR_B"), help="compare two runs")
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (read_logs(d) for d in args.compare)
        found = differences(a, b)
        iters = sum(len(r) for r in a.values())
        if found:
            print("slots: the runs differ:\n  " + "\n  ".join(found[:20]), file=sys.stderr)
            return 1
        print(f"slots: identical: {len(a)} rank(s), {iters} rank-iterations, frames, draws and pixels")
        return 0
    if args.work_dir is None:
        ap.error("WORK_DIR or --compare DIR_A DIR_B is required")
    try:
        logs = read_logs(args.work_dir)
    except SlotLogError as exc:
        print(f"train_dali: {exc}", file=sys.stderr)
        return 1
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
