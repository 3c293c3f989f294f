"""Check the per-rank slot logs of a DALI training run: `python -m upstream_env.slots WORK_DIR MODE`.

Each rank writes `slots_rank<r>.jsonl` (one line per iteration: the scene, token and data set index
every batch slot received). In `shard` mode the ranks' streams must be disjoint (no two slots of the
global batch on the same frame in an iteration); in `replicate` mode every rank walks the whole data
set, so (without a per-rank order offset) all ranks receive the same stream.
"""

from __future__ import annotations

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


def problems(logs: dict[int, list[dict]], mode: str) -> list[str]:
    """What contradicts `mode` in the logs (empty when the split is as expected)."""
    if not logs:
        return ["no slots_rank*.jsonl written (is data_loading_config.log_slots on?)"]
    found = []
    per_rank = {rank: streams(records) for rank, records in logs.items()}
    if mode == "shard":
        for i in range(min(len(r) for r in logs.values())):
            indices = [slot["index"] for records in logs.values() for slot in records[i]["slots"]]
            if len(set(indices)) != len(indices):
                found.append(f"iteration {i}: two slots of the global batch got the same frame {indices}")
    else:
        first, *others = per_rank.values()
        found += [f"rank {r} stream differs from rank 0" for r, s in list(per_rank.items())[1:] if s != first]
    return found


def main(argv: list[str]) -> int:
    work_dir, mode = Path(argv[0]), argv[1]
    logs = read_logs(work_dir)
    for rank, records in sorted(logs.items()):
        for j, stream in enumerate(streams(records)):
            scenes = [s["scene"][:6] for s in (r["slots"][j] for r in records)]
            print(f"train_dali: rank {rank} slot {j}: frames {stream} scenes {scenes}")
    bad = problems(logs, mode)
    if bad:
        print(f"train_dali: slot split is not {mode}:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print(f"train_dali: {len(logs)} rank(s), split checked: {mode}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
