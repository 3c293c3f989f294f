"""The scale case's arithmetic: node PSS over ranks, the further rank, growth per frame, targets."""

from __future__ import annotations

from loaderbench.nuscenes_size.scale import summarise
from loaderbench.nuscenes_size.scale_report import scale_table, verdicts


def rank(
    before: float,
    built: float,
    batches: float,
    pass_mb: float | None = None,
    frames: int = 1000,
    main_growth_mb: float = 0.0,
) -> dict:
    """One rank's phases; the rank's own process holds 600 MB, plus ``main_growth_mb`` at the pass end."""
    phases = {
        "imported": {"pss_mb": before, "main_pss_mb": 600.0},
        "built": {"pss_mb": built, "main_pss_mb": 600.0, "build_s": 1.5, "frames": frames},
        "first batch": {"pss_mb": built + 50, "main_pss_mb": 600.0, "first_batch_s": 0.5},
        "batches": {"pss_mb": batches, "main_pss_mb": 600.0, "batches": 100, "frames_touched": 200},
    }
    if pass_mb is not None:
        phases["pass"] = {"pss_mb": pass_mb, "main_pss_mb": 600.0 + main_growth_mb, "batches": 500,
                          "frames_touched": 1000}  # fmt: skip
    return phases


def test_node_pss_sums_the_ranks_and_the_further_rank_is_the_difference():
    one = summarise("dali", 1, [rank(1000, 1100, 1400)])
    two = summarise("dali", 2, [rank(900, 980, 1250), rank(900, 960, 1230)])
    assert one["node_pss_added_mb"]["built"] == 100 and two["node_pss_added_mb"]["built"] == 140
    full = summarise("dali", 1, [rank(1000, 1100, 1400, pass_mb=1480)])
    assert full["pass"]["frames_touched_after_batches"] == 800
    assert abs(full["pass"]["growth_kb_per_frame"] - 80 * 1024 / 800) < 1e-9
    assert abs(full["pass"]["pass_vs_batches"] - 1480 / 1400) < 1e-12
    assert abs(full["pass"]["workers_growth_kb_per_frame"] - 80 * 1024 / 800) < 1e-9
    split = summarise("dali", 1, [rank(1000, 1100, 1400, pass_mb=1480, main_growth_mb=60)])
    assert (
        abs(split["pass"]["workers_growth_kb_per_frame"] - 20 * 1024 / 800) < 1e-9
    )  # the rest is the main's
    result = {"frames": 1000, "pass_frames": 1000, "pickle_mib": 15.0, "pickle_read_s": 2.0, "batches": 100,
              "rows": [one, two, full]}  # fmt: skip
    got = {name: (value, ok) for name, value, ok in verdicts(result)}
    assert got["start-up with the store <= 3 s"] == ("1.50 s", True)
    assert got["first rank PSS added <= 300 MB (built)"] == ("100 MB", True)
    assert got["further rank PSS added <= 50 MB (built)"] == ("40 MB", True)
    assert got["further rank PSS added <= 50 MB (batches)"] == ("280 MB", False)
    assert got["first rank PSS added <= 300 MB (batches)"] == ("400 MB", False)
    assert got["PSS after a full pass <= 1.05 x after 100 batches"] == ("1.057 (1000 frames)", False)
    assert "| DALI | 2 | 1000 | 1.50 | 0.50 | 140 / 240 / 680 / - |  |" in scale_table(result)


def test_the_first_build_is_held_against_the_faster_read_and_diffs_must_be_zero():
    cold = summarise("dali", 1, [rank(1000, 1010, 1300)], cold=True)
    result = {"frames": 1000, "pass_frames": 1000, "pickle_mib": 15.0, "pickle_read_s": 1.6,
              "pickle_read_after_s": 1.4, "pickle_read_how": "mmcv.load", "batches": 100, "rows": [cold],
              "frame_diffs": {"frames": 1000, "diffs": 0}, "load_average": (1.0, 1.5, 2.0)}  # fmt: skip
    got = {name: (value, ok) for name, value, ok in verdicts(result)}
    key = "first build <= the pickle's read time (mmcv.load, the faster of the reads before and after)"
    assert got[key] == ("1.5 s vs 1.6 / 1.4 s", False)  # 1.5 s beats the first read, not the second
    assert got["store frames bit-identical to the per-frame reader's"] == (
        "0 differing attributes in 1000 frames",
        True,
    )
    result["frame_diffs"]["diffs"] = 3
    assert not dict((n, ok) for n, _, ok in verdicts(result))[
        "store frames bit-identical to the per-frame reader's"
    ]
    assert "mmcv.load 1.6 s" in scale_table(
        result
    ) and "load average at the end 1.0 / 1.5 / 2.0" in scale_table(result)
