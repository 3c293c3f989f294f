"""Which files the sweep runs and which it skips by rule (`equivalence.configs`), and where the
harness finds upstream's code: a fork with its sources under `src/` and the overlay moved there
(`overlay_moves`) is followed, not reported as an unapplied checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from equivalence.configs import loaded_skip_reason, static_skip_reason, upstream_configs
from overlaytool.targets import load_targets
from rebase_scenario import set_target_keys
from tooling_repos import SCRIPTS, Project, build_project, commit_files

FORK = {
    "src/projects/mmdet3d_plugin/__init__.py": "REGISTERED = 'the fork'\n",
    "src/projects/configs/StreamPETR/r50.py": "model = dict(type='StreamPETR')\ndata = dict(train=dict())\n",
    "src/projects/configs/tools/lr_table.py": "import glob\nprint(glob.glob('*.py'))\n",
}


@pytest.fixture
def src_fork(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A project pinned to a fork that keeps its sources under `src/`, the overlay's `projects/`
    moved there, applied."""
    monkeypatch.setenv("STREAMPETR_DALI_CACHE", str(tmp_path / "cache"))
    project = build_project(tmp_path)
    project.pin = commit_files(project.upstream, FORK, "Everything under src/")
    toml = project.root / "upstream" / "streampetr.toml"
    toml.write_text(toml.read_text().replace(project.history[0], project.pin))
    ours = project.root / "overlay" / "projects" / "configs" / "dali"
    ours.mkdir(parents=True)
    (ours / "r50_dali.py").write_text("_base_ = ['../StreamPETR/r50.py']\nuse_dali_pipeline = True\n")
    set_target_keys(project, '[target.overlay_moves]\nprojects = "src/projects"\n')
    assert project.run("apply") == 0
    return project


def test_upstream_configs_follow_the_forks_layout_without_the_overlays(src_fork: Project) -> None:
    target = load_targets(src_fork.root)[0]
    assert upstream_configs(target) == [
        "src/projects/configs/StreamPETR/r50.py",
        "src/projects/configs/tools/lr_table.py",
    ]


def test_the_harness_imports_the_plugin_from_the_forks_code_root(src_fork: Project) -> None:
    code = (
        "import sys; from pathlib import Path; from overlaytool.targets import load_targets\n"
        "from equivalence.original import config_path, import_upstream, upstream_root\n"
        "target = load_targets(Path(sys.argv[1]))[0]\n"
        "import_upstream(upstream_root(target))\n"
        "import projects.mmdet3d_plugin as plugin\n"
        "print(plugin.REGISTERED, config_path('projects/configs/StreamPETR/r50.py', target))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SCRIPTS)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(src_fork.root)], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    r50 = src_fork.checkout / "src" / "projects" / "configs" / "StreamPETR" / "r50.py"
    assert done.stdout.split() == ["the", "fork", str(r50)]


def test_files_that_are_no_configs_are_skipped_by_rule(tmp_path: Path) -> None:
    files = {
        "helper.py": "import glob\nprint(glob.glob('*.py'))\n",
        "missing_base.py": "_base_ = ['./gone.py']\nbatch_size = 4\n",
        "config.py": "_base_ = ['./base.py']\nbatch_size = 4\n",
        "base.py": "data = dict(samples_per_gpu=2)\n",
        "broken.py": "model = dict(\n",
        "runtime_base.py": "import os.path as osp\n_base_ = [osp.join('x', 'y.py')]\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    reasons = {name: static_skip_reason(tmp_path / name) for name in files}
    assert reasons["helper.py"] == "no `_base_`, `data` or `model`: not a config (a Python file beside them)"
    assert reasons["missing_base.py"] == f"its `_base_` './gone.py' does not exist ({tmp_path / 'gone.py'})"
    # loaded by mmcv: a config, a fragment (skipped once loaded), one that fails to load (not comparable)
    assert (
        reasons["config.py"]
        is reasons["base.py"]
        is reasons["broken.py"]
        is reasons["runtime_base.py"]
        is None
    )


def test_a_loaded_config_without_model_or_the_split_is_skipped() -> None:
    assert loaded_skip_reason({"data": {"samples_per_gpu": 2}}) == (
        "no `model` once loaded: a base or fragment, not a train config"
    )
    assert loaded_skip_reason({"model": {}, "data": {"train": {}}}, "test") == (
        "no `data.test` once loaded: a base or fragment, not a test config"
    )
    assert loaded_skip_reason({"model": {}, "data": {"train": {}, "test": {}}}, "test") is None


def test_a_config_whose_base_builds_on_a_missing_file_is_skipped_like_its_base(tmp_path: Path) -> None:
    """N6 (issue 60), eb45/StreamPETR_TTC_Head's shape: `…_4gpu.py` bases on a config of its folder
    whose own `_base_` is gone; both are skipped by rule, the chain named."""
    v3 = tmp_path / "StreamPETR_ttc_v3"
    v3.mkdir()
    (v3 / "frozen_20e.py").write_text("_base_ = ['../StreamPETR_ttc_v2/frozen_20e.py']\nmodel = dict()\n")
    (v3 / "frozen_20e_4gpu.py").write_text("_base_ = ['./frozen_20e.py']\nnum_gpus = 4\n")
    (v3 / "loop_a.py").write_text("_base_ = ['./loop_b.py']\n")
    (v3 / "loop_b.py").write_text("_base_ = ['./loop_a.py']\n")
    missing = tmp_path / "StreamPETR_ttc_v2" / "frozen_20e.py"
    gone = f"its `_base_` '../StreamPETR_ttc_v2/frozen_20e.py' does not exist ({missing})"
    assert static_skip_reason(v3 / "frozen_20e.py") == gone
    assert (
        static_skip_reason(v3 / "frozen_20e_4gpu.py")
        == f"its `_base_` './frozen_20e.py' is no config: {gone}"
    )
    assert static_skip_reason(v3 / "loop_a.py") is None  # a cycle is mmcv's to report, not a skip


def test_config_takes_several_names_after_one_flag_as_the_synopsis_says(capsys) -> None:
    """`--config a b` (what the synopsis `--config ... PATH ...` shows) selects both, as does the
    flag repeated; it was refused as "unrecognized arguments: b" (issue 60)."""
    from equivalence.__main__ import parse_args

    assert parse_args(["--config", "r50", "vov"]).config == ["r50", "vov"]
    assert parse_args(["--config", "r50", "--config", "a/b.py"]).config == ["r50", "a/b.py"]
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    assert "--config NAME [NAME ...]" in capsys.readouterr().out
