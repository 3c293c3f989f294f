"""Where the tools find StreamPETR's code in an applied checkout (`overlaytool.tree.code_root`): at the
root, where `overlay_moves` put the overlay's `projects/` (a fork with its sources under `src/`), or
wherever the tree holds the plugin; an unapplied checkout and one without the plugin are told apart."""

from __future__ import annotations

import shutil

import pytest
from overlaytool import OverlayError
from overlaytool.targets import load_targets
from overlaytool.tree.code_root import code_root, streampetr_code_root
from tooling_repos import Project, pin_layout

PLUGIN = {"projects/mmdet3d_plugin/__init__.py": "REGISTERED = True\n"}
CONFIG = {"projects/configs/StreamPETR/r50.py": "model = dict(type='StreamPETR')\ndata = dict()\n"}


def streampetr(project: Project):
    return load_targets(project.root)[0]


def test_the_root_layout(project: Project) -> None:
    pin_layout(project, {**PLUGIN, **CONFIG})
    with pytest.raises(
        OverlayError, match=r"StreamPETR is not an applied StreamPETR checkout; run `nox -s apply`"
    ):
        code_root(streampetr(project))
    assert project.run("apply") == 0
    assert code_root(streampetr(project)) == project.checkout


def test_a_fork_with_its_sources_under_src_is_followed(project: Project) -> None:
    moved = {f"src/{k}": v for k, v in {**PLUGIN, **CONFIG}.items()}
    pin_layout(project, moved, '[target.overlay_moves]\nprojects = "src/projects"\n')
    assert project.run("apply") == 0
    assert (project.checkout / "src" / "projects" / "configs" / "dali" / "r50_dali.py").is_file()
    assert code_root(streampetr(project)) == project.checkout / "src"


def test_the_plugin_is_found_in_the_tree_without_overlay_moves(project: Project) -> None:
    pin_layout(project, {f"python/src/{k}": v for k, v in PLUGIN.items()})
    assert project.run("apply") == 0
    assert code_root(streampetr(project)) == project.checkout / "python" / "src"


def test_an_applied_checkout_without_the_plugin_is_not_called_unapplied(project: Project) -> None:
    pin_layout(project, CONFIG)
    assert project.run("apply") == 0
    with pytest.raises(OverlayError) as caught:
        code_root(streampetr(project))
    message = str(caught.value)
    assert f"{project.checkout} is applied, but holds no projects/mmdet3d_plugin" in message
    assert "overlay_moves" in message and "not an applied" not in message


def test_the_runners_code_root_needs_tools_beside_the_moved_projects(project: Project) -> None:
    """`streampetr_code_root` (what the runners run from): the moved `projects/` with `tools/` beside
    it; a fork that moved `projects/` but not the overlay's `tools/` is named, not called unapplied."""
    moved = {f"src/{k}": v for k, v in {**PLUGIN, **CONFIG}.items()}
    pin_layout(
        project,
        {**moved, "src/tools/train.py": "x = 1\n"},
        '[target.overlay_moves]\nprojects = "src/projects"\n',
    )
    with pytest.raises(OverlayError, match=r"is not an applied StreamPETR checkout; run `nox -s apply`"):
        streampetr_code_root(project.root)
    assert project.run("apply") == 0
    assert streampetr_code_root(project.root) == project.checkout / "src"
    (project.checkout / "src" / "tools" / "train.py").unlink()
    with pytest.raises(
        OverlayError, match=r"src/tools/train.py is missing: the runners run tools/ beside projects/"
    ):
        streampetr_code_root(project.root)


def test_the_runners_take_an_applied_tree_without_git(project: Project) -> None:
    """The GPU stack kit carries the applied tree without `.git` (its digests checked instead): the
    runners' code root is still found where the plugin and tools/train.py are."""
    pin_layout(project, {**PLUGIN, **CONFIG})
    assert project.run("apply") == 0
    shutil.rmtree(project.checkout / ".git")
    assert streampetr_code_root(project.root) == project.checkout
