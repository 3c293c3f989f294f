"""Summary maths, ratios, the table and the JSON + PNG files (no speed assertions)."""

from __future__ import annotations

import json

import pytest
from loaderbench.results import figures, outputs
from loaderbench.sweep.cases import Case, sweep

# Float checks: pytest.approx's default (relative 1e-6) on float64 results of a few operations
# on exact inputs, which are within a few eps (2.2e-16) of the decimals written here.


def raw(
    case: Case,
    ms: list[float],
    cpu_s_per_batch: float,
    spb: int = 2,
    batches: int = 10,
    handover_ms: list[float] | None = None,
    pss: float = 80.0,
) -> dict:
    return {
        "handover_s": [m / 1e3 for m in handover_ms or []],
        "case": case.to_dict(),
        "batches": batches,
        "samples_per_batch": spb,
        "repeat_wall_s": [m * batches / 1e3 for m in ms],
        "repeat_cpu_s": [cpu_s_per_batch * batches] * len(ms),
        "peak_rss_mb": 100.0,
        "peak_pss_mb": pss,
    }


def with_summary(r: dict) -> dict:
    return {**r, "summary": figures.summarise_case(r)}


def test_summarise_case_median_spread_and_rates():
    s = figures.summarise_case(raw(Case("r50", "torch", workers=2), [400, 500, 600], 0.8))
    assert s["ms_per_batch"] == pytest.approx(500)
    assert s["spread"] == pytest.approx(0.4)
    assert s["samples_per_s"] == pytest.approx(4.0)
    assert s["samples_per_s_per_core"] == pytest.approx(2.0)
    assert s["cpu_s_per_sample"] == pytest.approx(0.4)
    assert s["cores_busy"] == pytest.approx(1.6)


def test_ratios_use_equal_cores_and_floors():
    cases = [
        with_summary(raw(Case("r50", "torch", workers=0), [900] * 3, 0.6)),
        with_summary(raw(Case("r50", "torch", workers=1), [800] * 3, 0.7)),
        with_summary(raw(Case("r50", "torch", workers=2), [600] * 3, 0.7)),
        with_summary(raw(Case("r50", "dali", threads=1), [200] * 3, 0.18)),
        with_summary(raw(Case("r50", "dali", threads=2), [150] * 3, 0.2)),
        {"case": Case("r50", "dali", threads=9).to_dict(), "error": "boom"},
    ]
    floors = [
        {"profile": "r50", "mode": "roi", "threads": 1, "ms_per_batch": 100.0, "cpu_s_per_batch": 0.1},
        {"profile": "r50", "mode": "full", "threads": 1, "ms_per_batch": 125.0, "cpu_s_per_batch": 0.12},
    ]
    rows = {r["dali"]: r for r in figures.ratios(cases, floors)}
    t1 = rows["r50/dali-cpu-t1"]
    assert t1["torch"] == "r50/torch-w1"  # the faster of the two 1-core torch configurations
    assert t1["speed"] == pytest.approx(4.0)
    assert t1["cpu_per_sample"] == pytest.approx(0.18 / 0.7)
    assert t1["torch_most_efficient"] == "r50/torch-w0"
    assert t1["vs_roi_floor"] == pytest.approx(2.0)
    assert t1["vs_full_floor"] == pytest.approx(1.6)
    assert t1["targets"] == {"speed_per_core": True, "cpu_per_sample": True, "vs_roi_floor": False,
                             "handover": False, "pss_vs_torch_w2": True}  # fmt: skip
    t2 = rows["r50/dali-cpu-t2"]
    assert t2["torch"] == "r50/torch-w2" and t2["speed"] == pytest.approx(4.0)
    assert "vs_roi_floor" not in t2  # no 2-thread floor given
    text = outputs.table(cases, floors, list(rows.values()))
    assert "r50/dali-cpu-t9 | failed: boom" in text
    assert "r50/decode-floor-roi-t1 | 100" in text


def test_write_json_and_png(tmp_path):
    cases = [
        with_summary(raw(Case("r50", "torch", workers=0), [900, 950, 1000], 0.6)),
        with_summary(raw(Case("r50", "dali", threads=1), [200, 210, 220], 0.2)),
        with_summary(raw(Case("accv", "dali", threads=2), [2000] * 3, 1.5, spb=8)),
    ]
    floors = [{"profile": "r50", "mode": "roi", "threads": 1, "ms_per_batch": 50.0, "cpu_s_per_batch": 0.05}]
    js, png = outputs.write({"cases": cases, "floors": floors, "title": "t"}, tmp_path / "o")
    assert json.loads(js.read_text())["cases"][1]["summary"]["ms_per_batch"] == pytest.approx(210)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    _, empty = outputs.write({"cases": [], "floors": []}, tmp_path / "empty")  # e.g. --stall only
    assert empty.exists()


def test_sweep_names_and_cores():
    names = [c.name for c in sweep(("r50", "accv"))]
    assert names == [
        "r50/torch-w0", "r50/torch-w1", "r50/torch-w2", "r50/dali-cpu-t1", "r50/dali-cpu-t2",
        "r50/dali-cpu-t1-pyw0", "r50/dali-cpu-t2-pyw0", "r50/dali-cpu-t1-fast", "r50/dali-cpu-t2-fast",
        "r50/dali-cpu-t1-noroi", "accv/torch-w2", "accv/dali-cpu-t2", "accv/dali-cpu-t2-fast",
    ]  # fmt: skip
    assert [c.cores for c in sweep(("r50",), variants=False)] == [1, 1, 2, 1, 2]
    assert sweep(("r50",))[-1].overrides == {"roi_decode": False}
    assert sweep(("r50",))[-2].overrides == {"image_path": "fast"}
    assert [c.name for c in sweep(("r50",), gpu=True)[-2:]] == ["r50/dali-gpu-t2", "r50/dali-gpu-t2-fast"]
    assert sweep(("r50",), gpu=True, variants=False)[-1].name == "r50/dali-gpu-t2"
    assert [c.name for c in sweep(("accv",), accv_full=True)][-2:] == [
        "accv/dali-cpu-t1-fast",
        "accv/dali-cpu-t2-fast",
    ]


def test_training_thread_and_pss_ratios():
    """next() after a model step is compared with the torch configuration of equal cores whose
    next() is cheapest (not the fastest one), PSS with torch's 2-worker configuration."""
    cases = [
        with_summary(
            raw(Case("r50", "torch", workers=0), [900] * 3, 0.6, handover_ms=[900, 880, 950], pss=1000)
        ),
        with_summary(
            raw(Case("r50", "torch", workers=1), [800] * 3, 0.7, handover_ms=[20, 18, 60], pss=1200)
        ),
        with_summary(
            raw(Case("r50", "torch", workers=2), [600] * 3, 0.7, handover_ms=[24, 16, 20], pss=1400)
        ),
        with_summary(
            raw(Case("r50", "dali", threads=1), [200] * 3, 0.2, handover_ms=[4, 5, 4.5, 40], pss=1300)
        ),
        with_summary(raw(Case("r50", "dali", threads=2), [150] * 3, 0.2, handover_ms=[6, 7, 5], pss=1500)),
    ]
    s = cases[3]["summary"]
    assert s["handover_ms"] == pytest.approx(4.75) and s["handover_ms_max"] == pytest.approx(40)
    assert s["handover_ms_p90"] == pytest.approx(29.5)  # numpy.percentile([4, 4.5, 5, 40], 90)
    rows = {r["dali"]: r for r in figures.ratios(cases, [])}
    t1, t2 = rows["r50/dali-cpu-t1"], rows["r50/dali-cpu-t2"]
    assert t1["torch_handover"] == "r50/torch-w1" and t1["handover"] == pytest.approx(4.75 / 20)
    assert t1["pss_vs_torch_w2"] == pytest.approx(1300 / 1400)
    assert t1["targets"]["handover"] and t1["targets"]["pss_vs_torch_w2"]
    assert t2["handover"] == pytest.approx(6 / 20) and not t2["targets"]["handover"]
    assert not t2["targets"]["pss_vs_torch_w2"]
    text = outputs.table(cases, [], list(rows.values()))
    assert "| r50/dali-cpu-t1 | 200 (200-200) | 4.75 (4.00-40.0) |" in text
    assert "| 0.237 (r50/torch-w1) | 0.93 |" in text


def test_a_variant_is_compared_with_the_default_settings_of_its_threads():
    """The fast image path against the exact path of the same profile, device and threads (not the
    other thread count, not another profile), with its CPU target."""
    cases = [
        with_summary(raw(Case("r50", "dali", threads=1), [200] * 3, 0.2)),
        with_summary(raw(Case("r50", "dali", threads=2), [120] * 3, 0.25)),
        with_summary(raw(Case("accv", "dali", threads=1), [900] * 3, 1.0)),
        with_summary(raw(Case("r50", "dali", threads=1, variant="fast"), [160] * 3, 0.11)),
        with_summary(raw(Case("r50", "dali", threads=2, variant="fast"), [100] * 3, 0.2)),
        with_summary(raw(Case("r50", "dali", threads=1, variant="pyw0"), [250] * 3, 0.2)),
    ]
    rows = {r["dali"]: r for r in figures.ratios(cases, [])}
    t1, t2 = rows["r50/dali-cpu-t1-fast"], rows["r50/dali-cpu-t2-fast"]
    assert t1["vs_default_speed"] == pytest.approx(200 / 160)
    assert t1["vs_default_cpu_per_sample"] == pytest.approx(0.11 / 0.2)
    assert t1["targets"]["fast_cpu_vs_exact"]
    assert t2["vs_default_cpu_per_sample"] == pytest.approx(0.2 / 0.25)
    assert not t2["targets"]["fast_cpu_vs_exact"]
    assert rows["r50/dali-cpu-t1-pyw0"]["vs_default_speed"] == pytest.approx(200 / 250)
    assert "fast_cpu_vs_exact" not in rows["r50/dali-cpu-t1-pyw0"]["targets"]
    assert "vs_default_speed" not in rows["r50/dali-cpu-t1"]
    assert "| 1.25, 0.55 |" in outputs.table(cases, [], list(rows.values()))


def test_table_without_handover_timing():
    cases = [with_summary(raw(Case("r50", "dali", threads=1), [200] * 3, 0.2))]
    assert cases[0]["summary"]["handover_ms"] is None
    assert "| r50/dali-cpu-t1 | 200 (200-200) | - |" in outputs.table(cases, [], figures.ratios(cases, []))


def test_rounds_pool_repeats_and_keep_the_highest_peak():
    case = Case("r50", "dali", threads=1)
    first = {**raw(case, [200, 210, 220], 0.3, handover_ms=[1.0, 2.0], pss=900.0), "repeats": 3}
    second = {**raw(case, [300, 310, 320], 0.5, handover_ms=[4.0], pss=950.0), "repeats": 3}
    merged = figures.merge_rounds([first, second])
    assert merged["repeats"] == 6 and merged["rounds"] == [first, second]
    s = figures.summarise_case(merged)
    assert s["ms_per_batch"] == pytest.approx(260)  # median of the six repeats, not of one round
    assert s["ms_per_batch_min"] == pytest.approx(200) and s["ms_per_batch_max"] == pytest.approx(320)
    assert s["cpu_s_per_batch"] == pytest.approx(0.4)
    assert s["handover_ms"] == pytest.approx(2.0) and s["handover_ms_max"] == pytest.approx(4.0)
    assert s["peak_pss_mb"] == 950.0
    assert figures.merge_rounds([first]) is first


def test_a_gpu_sweep_sets_the_counts_for_every_profile_and_can_leave_out_dalis_cpu_rows() -> None:
    """The GPU check's sweep: the DataLoader at 1..16 workers against DALI on the GPU, both profiles."""
    cases = sweep(("r50", "accv"), gpu=True, variants=False, workers=(1, 2, 4, 8, 16), threads=(4,),
                  dali_cpu=False)  # fmt: skip
    names = [c.name for c in cases]
    assert names == [f"{p}/torch-w{w}" for p in ("r50",) for w in (1, 2, 4, 8, 16)] + ["r50/dali-gpu-t4"] + [
        f"accv/torch-w{w}" for w in (1, 2, 4, 8, 16)
    ] + ["accv/dali-gpu-t4"]
    assert [c.name for c in sweep(("r50",), variants=False, workers=(1,), threads=(1,))] == [
        "r50/torch-w1", "r50/dali-cpu-t1",
    ]  # fmt: skip
