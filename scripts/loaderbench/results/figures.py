"""The figures of a benchmark run: per-configuration summaries over the repeats, rounds merged,
the decode floor's rows, and the ratios checked against their targets."""

from __future__ import annotations

import statistics
from typing import Any

from numpy import percentile  # linear interpolation: numpy's default method

TARGETS = {
    "speed_per_core": 3.0,  # samples/s vs the fastest torch configuration of equal cores: at least
    "cpu_per_sample": 1 / 3,  # CPU-s per sample vs that configuration: at most
    "vs_roi_floor": 1.5,  # ms/batch vs the region-of-interest decode floor: at most
    "handover": 1 / 4,  # training-thread ms/batch vs the best torch configuration of equal cores: at most
    "pss_vs_torch_w2": 1.0,  # peak PSS vs the DataLoader with 2 workers: at most
    "fast_cpu_vs_exact": 0.6,  # the fast image path's CPU-s per sample vs the exact path's: at most
}


def summarise_case(raw: dict[str, Any]) -> dict[str, Any]:
    """Per-batch figures of one configuration: median over repeats, spread = (max - min) / median."""
    n, spb = raw["batches"], raw["samples_per_batch"]
    ms = [w / n * 1e3 for w in raw["repeat_wall_s"]]
    cpu = [c / n for c in raw["repeat_cpu_s"]]
    med_ms, med_cpu = statistics.median(ms), statistics.median(cpu)
    sps = spb / (med_ms / 1e3)
    hand = [t * 1e3 for t in raw.get("handover_s") or []]
    return {
        "handover_ms": statistics.median(hand) if hand else None,
        "handover_ms_min": min(hand) if hand else None,
        "handover_ms_p90": percentile(hand, 90) if hand else None,
        "handover_ms_max": max(hand) if hand else None,
        "ms_per_batch": med_ms,
        "ms_per_batch_min": min(ms),
        "ms_per_batch_max": max(ms),
        "spread": (max(ms) - min(ms)) / med_ms if med_ms else 0.0,
        "samples_per_s": sps,
        "samples_per_s_per_core": sps / raw["case"]["cores"],
        "cpu_s_per_batch": med_cpu,
        "cpu_s_per_sample": med_cpu / spb,
        "samples_per_cpu_s": spb / med_cpu if med_cpu else float("inf"),
        "cores_busy": med_cpu / (med_ms / 1e3) if med_ms else 0.0,
        "peak_rss_mb": raw["peak_rss_mb"],
        "peak_pss_mb": raw["peak_pss_mb"],
    }


def merge_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Several rounds of one configuration as one result: repeats and ``next()`` times pooled (the
    medians span the host's drift), the highest peak memory; the rounds kept under ``rounds``."""
    if len(rounds) == 1:
        return rounds[0]
    merged = {**rounds[-1], "rounds": rounds}
    for key in ("repeat_wall_s", "repeat_cpu_s", "handover_s"):
        merged[key] = [v for r in rounds for v in r.get(key) or []]
    merged["repeats"] = sum(r["repeats"] for r in rounds)
    for key in ("peak_rss_mb", "peak_pss_mb"):
        merged[key] = max(r[key] for r in rounds)
    return merged


def summarise_floor(raw: dict[str, Any]) -> list[dict[str, Any]]:
    n = raw["batches"]
    out = []
    for f in raw["floors"]:
        out.append(
            {
                "profile": raw["profile"],
                "mode": f["mode"],
                "threads": f["threads"],
                "ms_per_batch": statistics.median(w / n * 1e3 for w in f["repeat_wall_s"]),
                "cpu_s_per_batch": statistics.median(c / n for c in f["repeat_cpu_s"]),
            }
        )
    return out


def ratios(cases: list[dict[str, Any]], floors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For every DALI configuration, its ratios against the torch configurations, the decode floors
    and (a setting variant) its default settings, each checked against :data:`TARGETS`."""
    out = []
    ok = [c for c in cases if "summary" in c]
    for dali in (c for c in ok if c["case"]["loader"] == "dali"):
        prof, cores, s = dali["case"]["profile"], dali["case"]["cores"], dali["summary"]
        torch = [c for c in ok if c["case"]["loader"] == "torch" and c["case"]["profile"] == prof]
        same = [c for c in torch if c["case"]["cores"] == cores]
        row: dict[str, Any] = {"dali": dali["case"]["name"], "cores": cores}
        if same:
            best = min(same, key=lambda c: c["summary"]["ms_per_batch"])
            t = best["summary"]
            row.update(
                torch=best["case"]["name"],
                speed=s["samples_per_s"] / t["samples_per_s"],
                cpu_per_sample=s["cpu_s_per_sample"] / t["cpu_s_per_sample"],
            )
        timed = [c for c in same if c["summary"].get("handover_ms") is not None]
        if timed and s.get("handover_ms") is not None:
            best = min(timed, key=lambda c: c["summary"]["handover_ms"])
            row.update(
                torch_handover=best["case"]["name"],
                handover=s["handover_ms"] / best["summary"]["handover_ms"],
            )
        w2 = [c for c in torch if c["case"]["workers"] == 2]
        if w2:
            row["pss_vs_torch_w2"] = s["peak_pss_mb"] / w2[0]["summary"]["peak_pss_mb"]
        if torch:
            eff = min(torch, key=lambda c: c["summary"]["cpu_s_per_sample"])
            row.update(
                torch_most_efficient=eff["case"]["name"],
                cpu_per_sample_vs_most_efficient=s["cpu_s_per_sample"] / eff["summary"]["cpu_s_per_sample"],
            )
        for mode in ("roi", "full"):
            f = [x for x in floors if x["profile"] == prof and x["mode"] == mode and x["threads"] == cores]
            if f and dali["case"]["device"] == "cpu":
                row[f"vs_{mode}_floor"] = s["ms_per_batch"] / f[0]["ms_per_batch"]
        default = [
            c
            for c in ok
            if c["case"]["loader"] == "dali"
            and not c["case"]["variant"]
            and all(c["case"][k] == dali["case"][k] for k in ("profile", "device", "threads"))
        ]
        if dali["case"]["variant"] and default:
            d = default[0]["summary"]
            row.update(
                vs_default_speed=s["samples_per_s"] / d["samples_per_s"],
                vs_default_cpu_per_sample=s["cpu_s_per_sample"] / d["cpu_s_per_sample"],
            )
        row["targets"] = {
            "speed_per_core": row.get("speed", 0) >= TARGETS["speed_per_core"],
            "cpu_per_sample": row.get("cpu_per_sample", 1e9) <= TARGETS["cpu_per_sample"],
            "vs_roi_floor": row.get("vs_roi_floor", 1e9) <= TARGETS["vs_roi_floor"],
            "handover": row.get("handover", 1e9) <= TARGETS["handover"],
            "pss_vs_torch_w2": row.get("pss_vs_torch_w2", 1e9) <= TARGETS["pss_vs_torch_w2"],
        }
        if dali["case"]["variant"] == "fast":
            cpu = row.get("vs_default_cpu_per_sample", 1e9)
            row["targets"]["fast_cpu_vs_exact"] = cpu <= TARGETS["fast_cpu_vs_exact"]
        out.append(row)
    return out
