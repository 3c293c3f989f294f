"""Git modes survive the tooling: executable bits, symlinks, mode changes in patches and in refresh."""

from __future__ import annotations

import shutil
from pathlib import Path

from scenario import SH, configure_v1
from tooling_repos import TRAIN_PY, Project, git, make_patch, mode_of, patched, with_filename


def status(project: Project) -> list[str]:
    return git(project.checkout, "status", "--porcelain", "--untracked-files=all").splitlines()


def test_patched_and_overlay_files_keep_their_git_mode(project: Project, texts) -> None:
    configure_v1(project, texts)
    assert project.run("apply") == 0
    checkout = project.checkout
    assert mode_of(checkout / "tools" / "dist_train.sh") == "100755"  # patched executable keeps +x
    assert (checkout / "tools" / "dist_train.sh").read_text() == SH + "# gloo\n"
    assert mode_of(checkout / "README.md") == "100755"  # the patch's mode change
    assert mode_of(checkout / "configs" / "latest.py") == "120000"  # upstream symlink untouched
    assert mode_of(checkout / "bin" / "run.sh") == "100755"  # overlay executable
    assert mode_of(checkout / "link.py") == "120000" and (checkout / "link.py").readlink() == Path("cfg.py")
    # git agrees: the only mode change it sees is the one the patch makes
    assert "old mode 100644\nnew mode 100755" in git(checkout, "diff", "README.md")
    assert "old mode" not in git(checkout, "diff", "tools/dist_train.sh")
    assert sorted(status(project)) == [
        " D old.py",
        " M README.md",
        " M tools/dist_train.sh",
        " M tools/train.py",
        "?? bin/run.sh",
        "?? cfg.py",
        "?? link.py",
    ]


def test_dropping_patches_restores_pristine_modes_in_one_run(project: Project, texts) -> None:
    configure_v1(project, texts)
    assert project.run("apply") == 0
    (project.patch_dir / "series").write_text("use-dali.patch\ndrop-old.patch\n")
    for name in ("launcher.patch", "exec-readme.patch"):
        (project.patch_dir / name).unlink()
    assert project.run("apply") == 0
    assert mode_of(project.checkout / "tools" / "dist_train.sh") == "100755"
    assert mode_of(project.checkout / "README.md") == "100644"
    assert sorted(status(project)) == [
        " D old.py",
        " M tools/train.py",
        "?? bin/run.sh",
        "?? cfg.py",
        "?? link.py",
    ]


def test_refresh_exports_a_mode_change_as_format_patch_writes_it(project: Project, tmp_path: Path) -> None:
    base = {"tools/train.py": TRAIN_PY, "README.md": "upstream\n"}
    dali = {"tools/train.py": patched(TRAIN_PY, 10, "DALI")}
    project.add_patch("use-dali.patch", make_patch(tmp_path, base, dali, "Use DALI"))
    (project.root / "overlay" / "cfg.py").write_text("a = 1\n")
    assert project.run("apply") == 0
    (project.checkout / "tools" / "train.py").chmod(0o755)
    (project.checkout / "cfg.py").chmod(0o755)
    assert project.run("refresh") == 0
    expected = make_patch(tmp_path, base, dali, "Use DALI", executable=["tools/train.py"])
    assert "old mode 100644\nnew mode 100755" in expected
    assert (project.patch_dir / "use-dali.patch").read_text() == with_filename(expected, "use-dali.patch")
    assert mode_of(project.root / "overlay" / "cfg.py") == "100755"  # overlay modes go back too
    shutil.rmtree(project.checkout)
    assert project.run("apply") == 0
    assert mode_of(project.checkout / "tools" / "train.py") == "100755"
    assert mode_of(project.checkout / "cfg.py") == "100755"


def test_a_patch_may_turn_a_file_into_a_symlink(project: Project, tmp_path: Path) -> None:
    base = {"tools/train.py": TRAIN_PY, "README.md": "upstream\n"}
    text = make_patch(tmp_path, base, {}, "Link the readme", links={"README.md": "tools/train.py"})
    project.add_patch("link.patch", text)
    assert project.run("apply") == 0
    assert mode_of(project.checkout / "README.md") == "120000"
    assert (project.checkout / "README.md").read_text() == TRAIN_PY
    assert project.run("refresh") == 0
    assert (project.patch_dir / "link.patch").read_text() == with_filename(text, "link.patch")
