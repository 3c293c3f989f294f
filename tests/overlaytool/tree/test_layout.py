"""Where the tools find StreamPETR's code in an applied checkout (`overlaytool.tree.layout`): at the
root, where `overlay_moves` put the overlay's `projects/` (a fork with its sources under `src/`), or
wherever the tree holds the plugin; an unapplied checkout and one without the plugin are told apart."""

from __future__ import annotations

import pytest
from overlaytool import OverlayError
from overlaytool.targets import load_targets
from overlaytool.tree.layout import code_root, configs_dir
from rebase_scenario import set_target_keys
from tooling_repos import Project, commit_files

PLUGIN = {"projects/mmdet3d_plugin/__init__.py": "REGISTERED = True\n"}
CONFIG = {"projects/configs/StreamPETR/r50.py": "model = dict(type='StreamPETR')\ndata = dict()\n"}


def pin_at(project: Project, files: dict[str, str], moves: str = "") -> Project:
    """Pin a commit of upstream holding `files` (with `moves` as the target's overlay_moves), add an
    overlay config, apply."""
    project.pin = commit_files(project.upstream, files, "layout")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    (project.root / "overlay" / "projects" / "configs" / "dali").mkdir(parents=True)
    (project.root / "overlay" / "projects" / "configs" / "dali" / "r50_dali.py").write_text("x = 1\n")
    if moves:
        set_target_keys(project, moves)
    return project


def streampetr(project: Project):
    return load_targets(project.root)[0]


def test_the_root_layout(project: Project) -> None:
    pin_at(project, {**PLUGIN, **CONFIG})
    with pytest.raises(
        OverlayError, match=r"StreamPETR is not an applied StreamPETR checkout; run `nox -s apply`"
    ):
        code_root(streampetr(project))
    assert project.run("apply") == 0
    assert code_root(streampetr(project)) == project.checkout
    assert configs_dir(streampetr(project)) == project.checkout / "projects" / "configs"


def test_a_fork_with_its_sources_under_src_is_followed(project: Project) -> None:
    moved = {f"src/{k}": v for k, v in {**PLUGIN, **CONFIG}.items()}
    pin_at(project, moved, '[target.overlay_moves]\nprojects = "src/projects"\n')
    assert project.run("apply") == 0
    assert (project.checkout / "src" / "projects" / "configs" / "dali" / "r50_dali.py").is_file()
    assert code_root(streampetr(project)) == project.checkout / "src"
    assert configs_dir(streampetr(project)) == project.checkout / "src" / "projects" / "configs"


def test_the_plugin_is_found_in_the_tree_without_overlay_moves(project: Project) -> None:
    pin_at(project, {f"python/src/{k}": v for k, v in PLUGIN.items()})
    assert project.run("apply") == 0
    assert code_root(streampetr(project)) == project.checkout / "python" / "src"


def test_an_applied_checkout_without_the_plugin_is_not_called_unapplied(project: Project) -> None:
    pin_at(project, CONFIG)
    assert project.run("apply") == 0
    with pytest.raises(OverlayError) as caught:
        code_root(streampetr(project))
    message = str(caught.value)
    assert f"{project.checkout} is applied, but holds no projects/mmdet3d_plugin" in message
    assert "overlay_moves" in message and "not an applied" not in message
