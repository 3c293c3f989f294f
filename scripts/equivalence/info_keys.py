"""``--add-info-key KEY``: a linked copy of a data set whose info pickles carry a key a fork reads and
StreamPETR's converter does not write (known: ``instance_inds``), from the nuScenes tables."""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

INFO_FILES = ("nuscenes2d_temporal_infos_train.pkl", "nuscenes2d_temporal_infos_val.pkl")


class InfoKeyError(ValueError):
    """A key that cannot be added, or tables that do not fit the infos (named)."""


def _tables(root: Path) -> Path:
    found = sorted(p for p in root.glob("v1.0-*") if (p / "sample_annotation.json").is_file())
    if not found:
        raise InfoKeyError(
            f"{root} has no nuScenes tables (v1.0-*/sample_annotation.json) to compute keys from"
        )
    return found[0]


def _instance_inds(root: Path) -> Callable[[dict], np.ndarray]:
    tables = _tables(root)
    instances = json.loads((tables / "instance.json").read_text(encoding="utf-8"))
    index = {record["token"]: i for i, record in enumerate(instances)}
    per_sample: dict[str, list[int]] = {}
    for ann in json.loads((tables / "sample_annotation.json").read_text(encoding="utf-8")):
        per_sample.setdefault(ann["sample_token"], []).append(index[ann["instance_token"]])

    def value(info: dict) -> np.ndarray:
        inds = np.array(per_sample.get(info["token"], []), dtype=np.int64)
        if len(inds) != len(info["gt_boxes"]):
            raise InfoKeyError(
                f"sample {info['token']}: {len(inds)} annotations in {tables.name}, {len(info['gt_boxes'])} "
                "boxes in its info: the tables are not those the infos were made from"
            )
        return inds

    return value


KNOWN: dict[str, Callable[[Path], Callable[[dict], np.ndarray]]] = {"instance_inds": _instance_inds}


def with_info_keys(data_root: Path, keys: list[str], out: Path) -> Path:
    """A data root under ``out`` that is ``data_root`` with ``keys`` added to every info; returns it."""
    unknown = [k for k in keys if k not in KNOWN]
    if unknown:
        raise InfoKeyError(
            f"--add-info-key {unknown[0]}: not a key this tool computes (known: {', '.join(KNOWN)})"
        )
    values = {key: KNOWN[key](data_root) for key in keys}
    copy = out / f"data-with-{'-'.join(sorted(keys))}"
    shutil.rmtree(copy, ignore_errors=True)
    copy.mkdir(parents=True)
    for entry in data_root.iterdir():
        if entry.name not in INFO_FILES:
            (copy / entry.name).symlink_to(entry.resolve())
    for name in INFO_FILES:
        if not (data_root / name).is_file():
            continue
        data = pickle.loads((data_root / name).read_bytes())
        for info in data["infos"]:
            for key, value in values.items():
                info.setdefault(key, value(info))
        (copy / name).write_bytes(pickle.dumps(data))
    return copy
