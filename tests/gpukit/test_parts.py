"""The GPU kit's parts: cut to size, reassembled bit for bit, a bad part refused by name."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from gpu_kits.kit_folder import install_runner, split
from gpukit.node import clean_pip_env
from gpukit.parts import FORMAT, MANIFEST, load_manifest, reassemble, unpack
from gpukit.steps import CheckError


def make_kit(tmp_path: Path, files: dict[str, bytes], max_part: int) -> tuple[Path, dict]:
    src, kit = tmp_path / "src", tmp_path / "kit"
    src.mkdir()
    (kit / "parts").mkdir(parents=True)
    entries = []
    for name, body in files.items():
        (src / name).write_bytes(body)
        entries.append(split(src / name, kit / "parts", max_part))
    manifest = {"format": FORMAT, "parts_dir": "parts", "files": entries}
    (kit / MANIFEST).write_text(json.dumps(manifest))
    return kit, manifest


def test_parts_respect_the_size_limit_and_rebuild_the_files(tmp_path: Path) -> None:
    body = os.urandom(2500)
    kit, manifest = make_kit(tmp_path, {"big-1-py3-none-any.whl": body, "lock.txt": b"x==1\n"}, 1000)
    sizes = [p["size"] for p in manifest["files"][0]["parts"]]
    assert sizes == [1000, 1000, 500]
    assert all(p.stat().st_size <= 1000 for p in (kit / "parts").iterdir())
    out = reassemble(kit, load_manifest(kit), tmp_path / "wheels", tmp_path / "other")
    assert [p.parent.name for p in out] == ["wheels", "other"]
    assert out[0].read_bytes() == body and out[1].read_bytes() == b"x==1\n"


def test_reassembling_again_leaves_no_partial_file(tmp_path: Path) -> None:
    # a one-part file is hard-linked from its part: a second run (gpu_check --stack after its
    # --until runs) links the same part again, and rename() of two links to one file does nothing
    kit, _ = make_kit(tmp_path, {"one-1-py3-none-any.whl": os.urandom(80), "split.txt": os.urandom(250)}, 100)
    for _ in range(2):
        out = reassemble(kit, load_manifest(kit), tmp_path / "wheels", tmp_path / "other")
    assert sorted(p.name for p in (tmp_path / "wheels").iterdir()) == ["one-1-py3-none-any.whl"]
    assert sorted(p.name for p in (tmp_path / "other").iterdir()) == ["split.txt"]
    assert [len(p.read_bytes()) for p in out] == [80, 250]


def test_a_part_with_a_wrong_hash_is_refused_by_name(tmp_path: Path) -> None:
    kit, manifest = make_kit(tmp_path, {"w-1-py3-none-any.whl": os.urandom(300)}, 100)
    part = kit / "parts" / "w-1-py3-none-any.whl.001"
    data = bytearray(part.read_bytes())
    data[7] ^= 0xFF  # same size, different bytes
    part.write_bytes(bytes(data))
    with pytest.raises(CheckError, match=r"part w-1-py3-none-any\.whl\.001: sha256 .* refusing it"):
        reassemble(kit, manifest, tmp_path / "wheels", tmp_path / "other")
    assert not (tmp_path / "wheels" / "w-1-py3-none-any.whl").exists()


def test_a_missing_or_truncated_part_is_named(tmp_path: Path) -> None:
    kit, manifest = make_kit(tmp_path, {"w-1-py3-none-any.whl": os.urandom(300)}, 100)
    (kit / "parts" / "w-1-py3-none-any.whl.002").write_bytes(b"short")
    with pytest.raises(CheckError, match=r"part w-1-py3-none-any\.whl\.002: 5 bytes, the manifest says 100"):
        reassemble(kit, manifest, tmp_path / "wheels", tmp_path / "other")
    (kit / "parts" / "w-1-py3-none-any.whl.002").unlink()
    with pytest.raises(CheckError, match=r"part w-1-py3-none-any\.whl\.002 is missing"):
        reassemble(kit, manifest, tmp_path / "wheels", tmp_path / "other")


def test_pip_sees_no_index_and_no_machine_config() -> None:
    env = clean_pip_env({"PIP_FIND_LINKS": "/somewhere", "PIP_INDEX_URL": "https://x", "PATH": "/bin"})
    assert env == {"PATH": "/bin", "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull,
                   "PIP_DISABLE_PIP_VERSION_CHECK": "1"}  # fmt: skip


def test_the_kits_gpu_check_py_runs_from_the_kit_folder_alone(tmp_path: Path) -> None:
    """The launcher and the runner's modules copied by the build are all the kit needs before its
    venv: run with no project path set, it probes this python's torch, reads the manifest and
    refuses a kit without wheels for this python, by name."""
    kit = tmp_path / "kit"
    launcher = install_runner(kit)
    manifest = {"format": FORMAT, "dali_cuda": 12, "parts_dir": "parts", "locks": {"cp00": "x.txt"}}
    (kit / MANIFEST).write_text(json.dumps({**manifest, "files": []}))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, launcher, "--work", tmp_path / "work"], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[1/6] the node's python and torch" in proc.stdout
    assert f"the kit holds wheels for cp00, this python is {tag}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_kits_gpu_check_py_reassembles_and_unpacks_before_the_venv(tmp_path: Path) -> None:
    """From a built kit (launcher, runner modules, parts of a lock and a source archive) the runner
    passes the probe, rebuilds both files from their parts, unpacks the sources and starts the venv
    step, whose check refuses the venv (its empty lock installs no numpy or DALI), by name."""
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    src = tmp_path / "src"
    (src / "scripts").mkdir(parents=True)
    (src / "scripts" / "hello.py").write_text("print('hello')\n")
    archive = tmp_path / "sources.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / "scripts" / "hello.py", arcname="scripts/hello.py")
    (tmp_path / "lock.txt").write_text("")
    kit = tmp_path / "kit"
    (kit / "parts").mkdir(parents=True)
    entries = [split(tmp_path / name, kit / "parts", 64) for name in ("lock.txt", "sources.tar.gz")]
    import torch  # the kit's DALI matches this torch's CUDA major (12 for a CPU build: Python 3.11 here)

    cuda = int(torch.version.cuda.split(".")[0]) if torch.version.cuda else 12
    manifest = {"format": FORMAT, "dali_cuda": cuda, "parts_dir": "parts", "locks": {tag: "lock.txt"}}
    (kit / MANIFEST).write_text(json.dumps({**manifest, "source": "sources.tar.gz", "files": entries}))
    launcher = install_runner(kit)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    work = tmp_path / "work"
    proc = subprocess.run(
        [sys.executable, launcher, "--work", work], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[2/6] verify and reassemble" in proc.stdout and "2 files, 0 MiB verified" in proc.stdout
    assert (work / "src" / "scripts" / "hello.py").read_text() == "print('hello')\n"
    assert "[3/6] venv from the kit's wheels" in proc.stdout
    # numpy from this python's site folder (the "node's torch", where the hermetic env has it too),
    # or none at all: either way the venv step names what it refused
    refused = ("venv: numpy comes from", "import check in the venv failed")
    assert "gpu_check FAILED" in proc.stderr and any(r in proc.stderr for r in refused), proc.stderr
    assert "Traceback" not in proc.stderr


def _tar_with(tmp_path: Path, *members: tarfile.TarInfo) -> Path:
    archive = tmp_path / "src.tar"
    with tarfile.open(archive, "w") as tar:
        good = tarfile.TarInfo("pkg/setup.py")
        good.size = 3
        tar.addfile(good, io.BytesIO(b"x=1"))
        for member in members:
            tar.addfile(member, io.BytesIO(b"") if member.isfile() else None)
    return archive


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.linkname = kind, target
    return member


@pytest.mark.parametrize("filtered", [True, False], ids=["data filter", "python before 3.11.4"])
def test_unpack_extracts_sources_and_refuses_members_out_of_the_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filtered: bool
) -> None:
    """Upstream archives are unpacked with the "data" filter, or, on Pythons without it (Debian 12's
    3.11.2), with the same refusals checked member by member."""
    if not filtered:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    dest = tmp_path / "ok"
    unpack(_tar_with(tmp_path), dest)
    assert (dest / "pkg" / "setup.py").read_text() == "x=1"
    escaping = [
        tarfile.TarInfo("../evil.py"),
        _link("pkg/out", "../../outside"),
        _link("pkg/hard", "../outside", tarfile.LNKTYPE),
    ]
    for member in escaping:
        with pytest.raises(tarfile.TarError):
            unpack(_tar_with(tmp_path, member), tmp_path / "bad")
        assert not (tmp_path / "evil.py").exists() and not (tmp_path / "outside").exists()
    absolute = tarfile.TarInfo(f"{tmp_path}/abs.py")  # the filter strips the slash; the check refuses
    with contextlib.suppress(tarfile.TarError):
        unpack(_tar_with(tmp_path, absolute), tmp_path / "abs")
    assert not (tmp_path / "abs.py").exists()
