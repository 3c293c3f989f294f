"""``data_loading_config.log_slots``: a collate that appends what each batch slot got to a JSONL
file (the (scene, frame), the augmentation draw and a SHA-1 of the slot's image tensor), then hands
the batch on to the next collate."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..loader import Collate


class SlotLog:
    """The collate: one line per batch, ``{"iter", "rank", "slots"}``. ``append`` is asked at the
    first batch whether to keep the file's lines (``--auto-resume`` decides after the build)."""

    def __init__(self, log_path: Path, rank: int, *, append: Callable[[], bool], then: Collate) -> None:
        self.log_path, self.rank, self.then = log_path, rank, then
        self._append: Callable[[], bool] | None = append
        log_path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, batch: dict[str, Any]) -> Any:
        if self._append is not None:
            if not self._append():
                self.log_path.write_text("")
            self._append = None
        slots = []
        images = batch["img"].detach().cpu().numpy()  # one device-to-host copy for the whole batch
        for b, (meta, record, prev) in enumerate(
            zip(batch["img_metas"], batch["dali"], batch["prev_exists"], strict=True)
        ):
            pixels = images[b].tobytes()
            slots.append(  # the sample's own (last) frame; a multi-frame sample also lists its queue
                {"scene": meta[-1]["scene_token"], "token": record["token"], "index": record["index"],
                 "prev_exists": bool(prev[-1]), "draw": record["draw"].as_dict(),
                 "queue": [f["index"] for f in record["frames"]],
                 "img_sha1": hashlib.sha1(pixels).hexdigest()}
            )  # fmt: skip
        line = {"iter": batch["dali"][0]["iteration"], "rank": self.rank, "slots": slots}
        with self.log_path.open("a") as f:
            f.write(json.dumps(line) + "\n")
        return self.then(batch)
