"""Vet a candidate upstream commit end to end in a throw-away copy of the project (`scratch_copy`):
the steps of :data:`STEPS`, those after a failure skipped (docs/rebase.md)."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from overlaytool import OverlayError, code_root, load_targets

from .scratch_copy import call, overlaytool, scratch

UP_TO_DATE = "up to date, nothing changed"
APPLIED = re.compile(rf"^(\S.* at \S.*: (applied|{UP_TO_DATE}))$", re.M)  # apply's line per target
STEPS = ("rebase", "apply", "apply-converges", "configs", "train")
CONFIG_LOAD = """\
import json, sys
from mmcv import Config
for path in sys.argv[1:]:
    try:
        Config.fromfile(path)
        print(json.dumps({"config": path, "ok": True}))
    except Exception as exc:
        print(json.dumps({"config": path, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:400]}))
"""


@dataclass
class Step:
    """One step's result: `ok` None means skipped (an earlier step failed)."""

    step: str
    ok: bool | None
    detail: str


@dataclass(frozen=True)
class VetSettings:
    """What the training steps need: the OpenMMLab env's python, the data set, the iterations."""

    python: Path
    data_root: Path
    iters: int = 1
    config: str = "smoke"  # upstream_run train's --config (the DALI smoke config, as `nox -s train_dali`)


def vet(
    root: Path,
    ref: str,
    source: str | None,
    settings: VetSettings,
    real_cache: Path,
    parent: Path | None = None,
) -> list[Step]:
    """Run every step on a copy of the project at `root`; the results in order."""
    with scratch(root, real_cache, parent) as (project, cache):
        return _steps(project, cache, ref, source, settings)


def passed(steps: list[Step]) -> bool:
    return all(s.ok for s in steps)


def _steps(project: Path, cache: Path, ref: str, source: str | None, settings: VetSettings) -> list[Step]:
    results: list[Step] = []
    frm = ["--from", source] if source else []
    runs = {
        "rebase": lambda: _rebase(project, cache, ref, frm),
        "apply": lambda: _apply(project, cache, converged=False),
        "apply-converges": lambda: _apply(project, cache, converged=True),
        "configs": lambda: _configs(project, settings),
        "train": lambda: _train(project, cache, settings),
    }
    for name in STEPS:
        if failed := next((s.step for s in results if s.ok is False), None):
            results.append(Step(name, None, f"skipped: {failed} failed"))
            continue
        print(f"vet: {name} ...", file=sys.stderr, flush=True)
        ok, detail = runs[name]()
        results.append(Step(name, ok, detail))
    return results


def _rebase(project: Path, cache: Path, ref: str, frm: list[str]) -> tuple[bool, str]:
    done = overlaytool(project, cache, "rebase", ref, *frm)
    if not done.ok:
        stop = "".join(f"{line}\n" for line in stop_lines(project))
        return False, f"the rebase did not finish (exit {done.returncode}):\n{stop}{done.tail()}"
    pin = load_targets(project)[0].pin
    return True, f"series moved to {pin.commit[:12]}"


def stop_lines(project: Path) -> list[str]:
    """What stopped the rebase, from its JSON report in the copy (the output's tail holds only the
    patch statuses): the stop, the unresolved references and the `overlay_moves` that resolve them."""
    try:
        report = json.loads((project / "upstream" / "rebase-report.json").read_text(encoding="utf-8"))
        stop = report.get("would_stop") or {}
        lines = [f"stop: {stop['kind']}: {stop['message']}"] if stop else []
        return lines + list(report.get("overlay_reference_summary") or [])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []  # no report (the rebase stopped before writing one): the tail says why


def _apply(project: Path, cache: Path, converged: bool) -> tuple[bool, str]:
    done = overlaytool(project, cache, "apply")
    if not done.ok:
        return False, f"apply failed (exit {done.returncode}):\n{done.tail()}"
    states = APPLIED.findall(done.output)
    if converged:
        changed = [line for line, state in states if state != UP_TO_DATE]
        if changed or not states:
            return False, "a second apply changed the checkout again:\n" + "\n".join(changed)
        return True, "a second apply is up to date"
    return True, f"applied ({len(states)} target(s))"


def config_files(project: Path) -> list[str]:
    """Every overlay config, as a path relative to the checkout it is copied into (where the
    target's `overlay_moves` put it: `src/projects/configs/...` in a fork that moved its sources)."""
    target = load_targets(project)[0]
    base = target.overlay_dir / "projects" / "configs" if target.overlay_dir else None
    if base is None or not base.is_dir():
        return []
    placed = target.overlay_files()
    return sorted(rel for rel, path in placed.items() if path.suffix == ".py" and path.is_relative_to(base))


def _configs(project: Path, settings: VetSettings) -> tuple[bool, str]:
    files = config_files(project)
    if not files:
        return False, "the overlay holds no config under projects/configs"
    target = load_targets(project)[0]
    try:
        root = code_root(target)  # the folder holding projects/ (the fork's layout followed)
    except OverlayError as exc:
        return False, str(exc)
    env = {"PYTHONPATH": str(root)}
    done = call([str(settings.python), "-c", CONFIG_LOAD, *files], target.checkout, env, timeout=900)
    results = {}
    for line in done.output.splitlines():
        if line.startswith("{"):
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            results[entry.get("config")] = entry
    failed = []
    for f in files:
        if not results.get(f, {}).get("ok"):
            error = results.get(f, {}).get("error", "not loaded")
            hint = config_error_hint(error)
            failed.append(f"{f}: {error}" + (f"\n  {hint}" if hint else ""))
    if failed:
        tail = "" if results else f"\n{done.tail()}"
        return False, f"{len(failed)} of {len(files)} config(s) do not load:\n" + "\n".join(failed) + tail
    return True, f"all {len(files)} overlay configs load"


SITE_PACKAGES_CONFIG = re.compile(
    r"""FileNotFoundError: .*["']([^"']*site-packages/[^"']*configs/[^"']*)["']"""
)


def config_error_hint(error: str) -> str | None:
    """The cause and the fix of a config that does not load, where known: a `_base_` built from an
    installed package's `__file__` points into site-packages, where a wheel-installed mmdet3d has
    no configs/ (`rebase --check` names the entry and the path into the nested checkout)."""
    found = SITE_PACKAGES_CONFIG.search(error)
    if found is None:
        return None
    return (
        f"cause: a `_base_` built from an installed package's __file__ ({found.group(1)}): the wheel "
        "installed there has no configs/. Fix: base it on the nested checkout's mmdetection3d/configs/ "
        "with a path relative to the config; `nox -s rebase -- --check` names the entry and that path"
    )


def _train(project: Path, cache: Path, settings: VetSettings) -> tuple[bool, str]:
    work = project.parent / "work"
    cmd = [
        sys.executable, "-m", "upstream_run", "train", "--loader", "dali", "--iters", str(settings.iters),
        "--data-root", str(settings.data_root), "--work-dir", str(work), "--python", str(settings.python),
        "--config", settings.config,
    ]  # fmt: skip
    env = {
        "PYTHONPATH": str(project / "scripts"),  # the copy's runner trains the copy's checkout
        "STREAMPETR_DALI_CACHE": str(cache),
        "STREAMPETR_DALI_FRAME_STORES": str(project.parent / "frame-stores"),
    }
    done = call(cmd, project, env, timeout=3600)
    if not done.ok:
        return False, f"training failed (exit {done.returncode}):\n{done.tail()}"
    return (
        True,
        f"{settings.iters} DALI training iteration(s) of {settings.config}: losses finite, checkpoint",
    )


def step_lines(steps: list[Step]) -> list[str]:
    """One line per step, details indented below."""
    mark = {True: "pass", False: "FAIL", None: "skip"}
    lines = []
    for s in steps:
        first, *rest = s.detail.splitlines() or [""]
        lines.append(f"  {s.step:16s} {mark[s.ok]}  {first}")
        lines += [f"      {line}" for line in rest]
    return lines


def steps_json(steps: list[Step]) -> dict:
    return {"ok": passed(steps), "steps": [asdict(s) for s in steps]}
