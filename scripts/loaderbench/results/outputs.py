"""The outputs of a benchmark run: the printed tables, the PNG chart and the JSON file (the figures
themselves: :mod:`.figures`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from overlaytool import replace_file


def _fmt(v: Any, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def _ms(v: float) -> str:
    """Milliseconds with the digits that matter: 1.23, 12.3, 123."""
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"


def table(cases: list[dict[str, Any]], floors: list[dict[str, Any]], rows: list[dict[str, Any]]) -> str:
    """The printed tables (markdown: the README takes them as they are)."""
    lines = [
        "| configuration | ms/batch (min-max) | training-thread ms/batch (min-max) | samples/s | CPU-s/batch "
        "| cores busy | peak RSS / PSS MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in cases:
        if "summary" not in c:
            lines.append(f"| {c['case']['name']} | failed: {c.get('error', '?')[-100:]} | | | | | |")
            continue
        s = c["summary"]
        hand = "-"
        if s.get("handover_ms") is not None:
            hand = f"{_ms(s['handover_ms'])} ({_ms(s['handover_ms_min'])}-{_ms(s['handover_ms_max'])})"
        lines.append(
            f"| {c['case']['name']} | {s['ms_per_batch']:.0f} ({s['ms_per_batch_min']:.0f}-"
            f"{s['ms_per_batch_max']:.0f}) | {hand} | {s['samples_per_s']:.2f} | "
            f"{s['cpu_s_per_batch']:.3f} | {s['cores_busy']:.2f} | "
            f"{s['peak_rss_mb']:.0f} / {s['peak_pss_mb']:.0f} |"
        )
    for f in floors:
        lines.append(
            f"| {f['profile']}/decode-floor-{f['mode']}-t{f['threads']} | {f['ms_per_batch']:.0f} | | | "
            f"{f['cpu_s_per_batch']:.3f} | | |"
        )
    lines += [
        "",
        "| DALI | vs torch (equal cores) | samples/s × | CPU-s/sample × | training-thread × (vs) "
        "| PSS × torch-w2 | CPU-s/sample × best-CPU torch | × ROI floor | × full floor "
        "| samples/s, CPU-s/sample × default settings |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dali']} | {r.get('torch', '-')} | {_fmt(r.get('speed'))} | "
            f"{_fmt(r.get('cpu_per_sample'))} | "
            f"{_fmt(r.get('handover'), '.3f')} ({r.get('torch_handover', '-')}) | "
            f"{_fmt(r.get('pss_vs_torch_w2'))} | {_fmt(r.get('cpu_per_sample_vs_most_efficient'))} "
            f"({r.get('torch_most_efficient', '-')}) | {_fmt(r.get('vs_roi_floor'))} | "
            f"{_fmt(r.get('vs_full_floor'))} | {_fmt(r.get('vs_default_speed'))}, "
            f"{_fmt(r.get('vs_default_cpu_per_sample'))} |"
        )
    return "\n".join(lines)


def chart(cases: list[dict[str, Any]], floors: list[dict[str, Any]], path: Path, title: str = "") -> None:
    """Bars of ms/batch and CPU-s/batch per configuration (one row per profile), floors as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles = list(dict.fromkeys(c["case"]["profile"] for c in cases if "summary" in c))
    fig, axes = plt.subplots(
        max(1, len(profiles)), 3, figsize=(17, 3.6 * max(1, len(profiles))), squeeze=False
    )
    if not profiles:
        axes[0][0].text(0.5, 0.5, "no loader configuration measured", ha="center")
    colours = {"torch": "#d9822b", "dali": "#2b7bd9"}
    for row, prof in zip(axes[: len(profiles)], profiles, strict=True):
        mine = [c for c in cases if "summary" in c and c["case"]["profile"] == prof]
        for ax, key, label, what in (
            (row[0], "ms_per_batch", "ms per batch", "ms per batch"),
            (row[1], "cpu_s_per_batch", "CPU s per batch (process tree)", "CPU s per batch (process tree)"),
            (row[2], "handover_ms", "ms (log scale)", "training-thread next() after a model step"),
        ):
            shown = [c for c in mine if c["summary"].get(key) is not None]
            vals = [c["summary"][key] for c in shown]
            err = None  # min-max whiskers where the summary has them
            if key != "cpu_s_per_batch":
                err = [
                    [v - c["summary"][f"{key}_min"] for v, c in zip(vals, shown, strict=True)],
                    [c["summary"][f"{key}_max"] - v for v, c in zip(vals, shown, strict=True)],
                ]
            colour = [colours[c["case"]["loader"]] for c in shown]
            ax.bar(range(len(shown)), vals, yerr=err, color=colour, capsize=3)
            if key == "handover_ms":
                ax.set_yscale("log")
            for f in (f for f in floors if f["profile"] == prof and key in f):
                style = "--" if f["mode"] == "roi" else ":"
                colour = "#444444" if f["threads"] == 1 else "#2ca02c"
                ax.axhline(
                    f[key], linestyle=style, color=colour, linewidth=1,
                    label=f"decode floor {f['mode']}, {f['threads']} thr",
                )  # fmt: skip
            names = [c["case"]["name"].split("/", 1)[1] for c in shown]
            ax.set_xticks(range(len(shown)), names, rotation=20, fontsize=8)
            ax.set_ylabel(label)
            ax.set_title(f"{prof}: {what}", fontsize=10)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_json(path: Path, result: dict[str, Any]) -> None:
    """A run's JSON (``bench.json``, ``scale.json`` ...: read back by comparisons and the docs' tables),
    replaced whole (the tooling's one writer, ``overlaytool.replace_file``)."""
    replace_file(path, json.dumps(result, indent=1, default=str) + "\n")


def write(report: dict[str, Any], out: Path, name: str = "bench", draw: Any = None) -> tuple[Path, Path]:
    """``<name>.json`` and ``<name>.png`` under ``out``; ``draw(report, png)`` (default: :func:`chart`)."""
    out.mkdir(parents=True, exist_ok=True)
    js, png = out / f"{name}.json", out / f"{name}.png"
    write_json(js, report)
    if draw is None:
        chart(report["cases"], report.get("floors", []), png, report.get("title", ""))
    else:
        draw(report, png)
    return js, png
