"""`refresh` keeps the layout of a series file: header, group labels above their patches, trailer."""

from __future__ import annotations

from pathlib import Path

from tooling_repos import TRAIN_PY, Project, git, make_patch, patched

SERIES = """# header line
# second header line

# group 1: portability
a.patch

# group 2: integration
b.patch
# trailing note
"""


def test_refresh_keeps_group_labels_and_puts_a_new_patch_after_its_commit(
    project: Project, tmp_path: Path
) -> None:
    first = patched(TRAIN_PY, 5, "first")
    base = {"tools/train.py": TRAIN_PY, "README.md": "upstream\n"}
    project.add_patch("a.patch", make_patch(tmp_path, base, {"tools/train.py": first}, "A"))
    project.add_patch("b.patch", make_patch(tmp_path, base, {"README.md": "ours\n"}, "B"))
    (project.patch_dir / "series").write_text(SERIES)
    assert project.run("apply") == 0
    assert project.run("edit") == 0
    assert project.run("refresh") == 0
    assert (project.patch_dir / "series").read_text() == SERIES  # unchanged series round-trips

    assert project.run("edit") == 0
    (project.checkout / "tools" / "train.py").write_text(patched(first, 30, "second"))
    git(project.checkout, "commit", "-q", "-a", "-m", "C new concern", "-m", "Description: x\nForwarded: no")
    assert project.run("refresh") == 0
    lines = (project.patch_dir / "series").read_text().splitlines()
    assert lines == [
        "# header line",
        "# second header line",
        "",
        "# group 1: portability",
        "a.patch",
        "",
        "# group 2: integration",
        "b.patch",
        "c-new-concern.patch",
        "# trailing note",
    ]
