"""The series footprint: the lint prints the upstream lines each patch changes and their total, and
fails a patch that adds more than a hook's 15 lines without a `Hook-Size-Reason:` in its header."""

from __future__ import annotations

from pathlib import Path

from overlaytool.footprint import ADDED_LIMIT, footprint_problems, series_footprint
from overlaytool.series import read_series
from overlaytool.targets import REPO_ROOT, load_targets
from tooling_repos import Project, make_patch


def _lines(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(n))


def _big_patch(tmp_path: Path, added: int) -> str:
    return make_patch(tmp_path, {"a": "0\n1\n"}, {"a": "0\n" + _lines(added)}, f"Add {added}")


def test_the_lint_prints_each_patchs_added_and_removed_lines_and_the_total(
    project: Project, tmp_path: Path, capsys
) -> None:
    project.add_patch("one.patch", make_patch(tmp_path, {"a": "1\n2\n3\n"}, {"a": "1\nX\nY\n3\n"}, "One"))
    project.add_patch("two.patch", make_patch(tmp_path, {"b": "1\n"}, {"b": "1\n2\n"}, "Two"))
    assert project.run("lint") == 0
    out = capsys.readouterr().out
    assert "     3  +2   -1   one.patch\n" in out
    assert "     1  +1   -0   two.patch\n" in out
    assert "     4  +3   -1   in all (2 patches)\n" in out


def test_a_patch_adding_more_than_a_hook_fails_the_lint_until_its_header_says_why(
    project: Project, tmp_path: Path, capsys
) -> None:
    text = _big_patch(tmp_path, ADDED_LIMIT + 1)
    project.add_patch("big.patch", text)
    assert project.run("lint") == 1
    err = capsys.readouterr().err
    assert f"big.patch: adds {ADDED_LIMIT + 1} upstream lines, more than a hook's {ADDED_LIMIT}" in err
    assert "'Hook-Size-Reason:' header field" in err

    reason = "Forwarded: not-needed\nHook-Size-Reason: a table upstream reads at import time\n"
    path = project.patch_dir / "big.patch"
    path.write_text(path.read_text().replace("Forwarded: not-needed\n", reason, 1))
    assert project.run("lint") == 0
    assert f"[over {ADDED_LIMIT}: a table upstream reads at import time]" in capsys.readouterr().out


def test_a_patch_adding_exactly_a_hooks_lines_passes(project: Project, tmp_path: Path, capsys) -> None:
    project.add_patch("edge.patch", _big_patch(tmp_path, ADDED_LIMIT))
    assert project.run("lint") == 0
    assert f"+{ADDED_LIMIT:<3d} -1   edge.patch" in capsys.readouterr().out


def test_the_reason_must_be_in_the_header_not_in_the_diff(project: Project, tmp_path: Path, capsys) -> None:
    """A `Hook-Size-Reason:` line the patch adds to an upstream file is no reason."""
    new = "0\nHook-Size-Reason: smuggled\n" + _lines(ADDED_LIMIT)
    project.add_patch("smuggle.patch", make_patch(tmp_path, {"a": "0\n"}, {"a": new}, "Smuggle"))
    assert project.run("lint") == 1
    assert "smuggle.patch: adds 16 upstream lines" in capsys.readouterr().err


def test_every_patch_of_the_repository_is_a_hook() -> None:
    """The project's own series: no patch over the limit without its reason, and 200 lines in all."""
    for target in load_targets(REPO_ROOT):
        footprints = series_footprint(target.patch_dir, read_series(target.patch_dir))
        assert footprint_problems(footprints, target.patch_dir) == []
        assert sum(f.changed for f in footprints) <= 200, [(f.name, f.changed) for f in footprints]
