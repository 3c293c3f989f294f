"""`rebase --check` after a stop: each provisional status says whether it shares files with a patch
the check left out (then it may be an artefact of leaving that patch out) or none (the real rebase
meets it too), and the summary counts the provisional stops that may be artefacts."""

from __future__ import annotations

import json
from pathlib import Path

from tooling_repos import Project, commit_files, git, make_patch, patched

FILE = "".join(f"row {i}\n" for i in range(1, 13))
BASE = {"a.py": FILE, "b.py": FILE}
P1 = patched(FILE, 5, "ours 5")


def series_of_three(project: Project, tmp: Path) -> Project:
    """p1 edits a.py; p2 edits a.py on top of p1 (its context holds p1's line); p3 edits b.py."""
    project.pin = commit_files(project.upstream, BASE, "two files")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    project.add_patch("p1.patch", make_patch(tmp, BASE, {"a.py": P1}, "Ours on row 5"))
    project.add_patch(
        "p2.patch", make_patch(tmp, {**BASE, "a.py": P1}, {"a.py": patched(P1, 6, "ours 6")}, "Row 6")
    )
    project.add_patch(
        "p3.patch", make_patch(tmp, BASE, {"b.py": patched(FILE, 3, "ours 3")}, "Ours on row 3")
    )
    assert project.run("apply") == 0
    return project


def test_provisional_stops_say_which_may_be_artefacts_of_the_patch_left_out(
    project: Project, tmp_path: Path, capsys
) -> None:
    series = series_of_three(project, tmp_path)
    commit_files(
        series.upstream, {"a.py": patched(FILE, 5, "theirs 5"), "b.py": patched(FILE, 3, "theirs 3")}, "Up"
    )
    capsys.readouterr()
    assert series.run("rebase", "--check", "main") == 1
    out = capsys.readouterr().out
    assert "  p1.patch: conflict\n" in out
    assert (
        "p2.patch: conflict [provisional: after the stop at p1.patch] "
        "(may be an artefact: shares a.py with a patch left out)" in out
    )
    assert "p3.patch: conflict [provisional: after the stop at p1.patch] (independent: shares no file" in out
    assert (
        "1 of 2 provisional stop(s) may be artefacts of the patches left out (p2.patch: they share files "
        "with one); p3.patch share(s) none and would stop the real rebase too" in out
    )
    report = json.loads((series.root / "upstream" / "rebase-report.json").read_text())
    entries = {
        e["name"]: (e["provisional"], e["may_be_artefact"], e["shares_with_left_out"])
        for e in report["patch_entries"]
    }
    assert entries == {
        "p1.patch": (False, False, []),
        "p2.patch": (True, True, ["a.py"]),
        "p3.patch": (True, False, []),
    }

    # the real rebase: p1 stops; resolved with our line, p2 applies after all and p3 stops as predicted
    assert series.run("rebase", "main") == 1
    (series.checkout / "a.py").write_text(P1)
    capsys.readouterr()
    assert series.run("rebase", "--continue") == 1
    err = capsys.readouterr().err
    assert "Patch p3.patch conflicts with upstream" in err
    assert "  p2.patch: clean\n" in err
    assert git(series.checkout, "show", "HEAD:a.py") == patched(P1, 6, "ours 6")
