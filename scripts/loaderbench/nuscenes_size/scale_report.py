"""Tables, targets and the plot of the scale case (:mod:`.scale`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SCALE_TARGETS = {
    "startup_s": 3.0,  # DALI constructor with the store present, 1 rank
    "first_rank_mb": 300.0,  # node PSS the loader adds, 1 rank
    "further_rank_mb": 50.0,  # what a second rank adds to the node's PSS
    "pass_ratio": 1.05,  # tree PSS at the end of a full pass / after --batches batches
}


def _row(result: dict[str, Any], loader: str, ranks: int, cold: bool = False, full_pass: bool = False):
    """The row of that run at the replica's size (the full pass: at its own size)."""
    want = (loader, ranks, cold, full_pass)
    for row in result["rows"]:
        at_size = full_pass or row["frames"] == result["frames"]
        if at_size and (row["loader"], row["ranks"], row["cold_store"], "pass" in row) == want:
            return row
    return None


def verdicts(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """(target, measured, met) for the issue's targets, from the DALI rows."""
    t = SCALE_TARGETS
    out: list[tuple[str, str, bool | None]] = []

    def check(target: str, measured: str, met: bool) -> None:
        out.append((target, measured, met))

    cold, warm, two = _row(result, "dali", 1, cold=True), _row(result, "dali", 1), _row(result, "dali", 2)
    if warm:
        check(
            f"start-up with the store <= {t['startup_s']:g} s",
            f"{warm['build_s']:.2f} s",
            warm["build_s"] <= t["startup_s"],
        )
    if cold:
        reads = [r for r in (result["pickle_read_s"], result.get("pickle_read_after_s")) if r]
        how = result.get("pickle_read_how", "read")
        check(
            f"first build <= the pickle's read time ({how}, the faster of the reads before and after)",
            f"{cold['build_s']:.1f} s vs {' / '.join(f'{r:.1f}' for r in reads)} s",
            cold["build_s"] <= min(reads),
        )
        torch = _row(result, "torch", 1)
        if torch:
            measured = f"{cold['build_s']:.1f} s vs {torch['build_s']:.1f} s"
            check("first build <= the DataLoader's build", measured, cold["build_s"] <= torch["build_s"])
    for phase in ("built", "batches"):
        if warm:
            mb = warm["node_pss_added_mb"][phase]
            check(
                f"first rank PSS added <= {t['first_rank_mb']:g} MB ({phase})",
                f"{mb:.0f} MB",
                mb <= t["first_rank_mb"],
            )
        if warm and two:
            mb = two["node_pss_added_mb"][phase] - warm["node_pss_added_mb"][phase]
            check(
                f"further rank PSS added <= {t['further_rank_mb']:g} MB ({phase})",
                f"{mb:.0f} MB",
                mb <= t["further_rank_mb"],
            )
    if diffs := result.get("frame_diffs"):
        check(
            "store frames bit-identical to the per-frame reader's",
            f"{diffs['diffs']} differing attributes in {diffs['frames']} frames",
            diffs["diffs"] == 0,
        )
    passes = (r for r in result["rows"] if r["loader"] == "dali" and "pass" in r)
    if full := next((r for r in passes if r["frames"] == result["pass_frames"]), None):
        ratio = full["pass"]["pass_vs_batches"]
        check(
            f"PSS after a full pass <= {t['pass_ratio']:g} x after {result['batches']} batches",
            f"{ratio:.3f} ({full['frames']} frames)",
            ratio <= t["pass_ratio"],
        )
    return out


def scale_table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['frames']} frames ({result['pickle_mib']:.0f} MiB info pickle, "
        f"{result.get('pickle_read_how', 'read')} {result['pickle_read_s']:.1f} s); full pass on "
        f"{result['pass_frames']} frames; load average at the end {_load(result)}",
        "",
        "| loader | ranks | frames | build s | first batch s | node PSS added MB: built / 1st batch / "
        f"{result['batches']} batches / pass end | growth after batch {result['batches']}: MB, KB/frame "
        "(loader's workers: KB/frame) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        added = row["node_pss_added_mb"]
        pss = " / ".join(
            f"{added[p]:.0f}" if p in added else "-" for p in ("built", "first batch", "batches", "pass")
        )
        name = ("DALI" if row["loader"] == "dali" else "DataLoader, 2 workers") + (
            " (first build)" if row["cold_store"] else ""
        )
        growth = ""
        if "pass" in row:
            growth = f"{row['pass']['node_pss_growth_mb']:.1f}, {row['pass']['growth_kb_per_frame']:.1f}"
            if "workers_growth_kb_per_frame" in row["pass"]:
                growth += f" ({row['pass']['workers_growth_kb_per_frame']:.1f})"
        lines.append(
            f"| {name} | {row['ranks']} | {row['frames']} | {row['build_s']:.2f} | "
            f"{row['first_batch_s']:.2f} | {pss} | {growth} |"
        )
    lines += ["", "| target | measured | met |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {'yes' if ok else 'no'} |" for name, value, ok in verdicts(result)]
    return "\n".join(lines)


def _load(result: dict[str, Any]) -> str:
    return " / ".join(f"{x:.1f}" for x in result.get("load_average", ())) or "-"


def _label(row: dict[str, Any]) -> str:
    name = "DALI" if row["loader"] == "dali" else "DataLoader"
    return f"{name} x{row['ranks']}" + (" first build" if row["cold_store"] else "")


def chart(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result["rows"] if "pass" not in r]
    labels = [_label(r) for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ax1.barh(labels, [r["build_s"] for r in rows], color="tab:blue")
    ax1.set_xlabel("build s")
    ax1.invert_yaxis()
    for i, phase in enumerate(("built", "batches")):
        label = "after build" if phase == "built" else f"after {result['batches']} batches"
        values = [r["node_pss_added_mb"][phase] for r in rows]
        ax2.barh([j + 0.4 * i for j in range(len(rows))], values, height=0.4, label=label)
    ax2.set_yticks([j + 0.2 for j in range(len(rows))], labels)
    ax2.invert_yaxis()
    ax2.set_xlabel("node PSS added by the loader, MB")
    ax2.legend()
    fig.suptitle(f"loaders at {result['frames']} frames")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
