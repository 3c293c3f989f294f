"""A StreamPETR info pickle of N distinct frames made from a small one: copy ``j`` shifted in time
past copy ``j - 1`` and its tokens rehashed, the images the source's own (docs/benchmark.md)."""

from __future__ import annotations

import copy
import hashlib
import pickle
from pathlib import Path
from typing import Any

TOKEN_KEYS = ("token", "scene_token", "prev", "next")
GAP_US = 1_000_000


def _token(token: str, copy_no: int) -> str:
    if not token or copy_no == 0:
        return token
    return hashlib.md5(f"{token}:{copy_no}".encode()).hexdigest()


def _shift(info: dict[str, Any], copy_no: int, dt: int) -> dict[str, Any]:
    info = copy.deepcopy(info)
    info["timestamp"] += dt
    for key in TOKEN_KEYS:
        if isinstance(info.get(key), str):
            info[key] = _token(info[key], copy_no)
    for record in [*info["cams"].values(), *info.get("sweeps", [])]:
        if "timestamp" in record:
            record["timestamp"] += dt
        if isinstance(record.get("sample_data_token"), str):
            record["sample_data_token"] = _token(record["sample_data_token"], copy_no)
    return info


def replicate(data: dict[str, Any], frames: int) -> dict[str, Any]:
    """The info dict ``data`` grown (or cut) to ``frames`` key frames, as the module doc says."""
    infos = sorted(data["infos"], key=lambda i: i["timestamp"])
    stamps = [i["timestamp"] for i in infos]
    for cam_info in (c for i in infos for c in i["cams"].values()):
        stamps.append(cam_info["timestamp"])
    span = max(stamps) - min(stamps) + GAP_US
    out = []
    for k in range(frames):
        copy_no, pos = divmod(k, len(infos))
        out.append(_shift(infos[pos], copy_no, copy_no * span))
    return {**{k: v for k, v in data.items() if k != "infos"}, "infos": out}


def replicate_infos(src: Path, dst: Path, frames: int) -> Path:
    """Write the ``frames``-frame replica of the info pickle ``src`` to ``dst`` (kept if it exists
    with the same source and size, see the ``.source`` file beside it); return ``dst``."""
    from overlaytool import replace_file

    stamp = dst.with_name(dst.name + ".source")
    want = f"{hashlib.sha256(Path(src).read_bytes()).hexdigest()} {frames}\n"
    if dst.is_file() and stamp.is_file() and stamp.read_text() == want:
        return dst
    with Path(src).open("rb") as f:
        data = pickle.load(f)
    dst.parent.mkdir(parents=True, exist_ok=True)
    replace_file(dst, pickle.dumps(replicate(data, frames), protocol=2))  # like mmcv.dump
    replace_file(stamp, want)  # after the replica: a kill between rebuilds it
    return dst
