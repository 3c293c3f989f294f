"""The stack kit's pieces without building one: what it carries for a node with its own torch, its
bundles (the first one holds what mmcv's compile needs), the applied tree checked file by file
against apply's digests, and the runner refusing a kit that is not for this node."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from gpu_kits.stack_kit import bundle
from gpu_kits.stack_wheels import early_names, stack_requirements
from gpukit.parts import FORMAT, manifest_problem, part_path, parts_root, sha256
from gpukit.stack import run_stack, verify_applied
from gpukit.steps import CheckError, Steps
from upstream_env.node_torch import MMCV_RUNTIME, read_pins, requirement_name

MiB = 2**20


def test_the_stack_requirements_are_what_the_nodes_env_build_installs(tmp_path: Path) -> None:
    """The kit resolves the files `upstream_env build --torch-from` installs on the node: no torch,
    no mmcv-full (compiled there, installed --no-deps) and so no opencv-python, mmcv's other needs,
    DALI of the node's CUDA major, the constraints without torch's lines."""
    req, con = stack_requirements(13, tmp_path / "gpu-stack-requirements-cu13.txt")
    pins = read_pins(req)
    assert not {"torch", "torchvision", "mmcv-full"} & set(pins)
    assert pins["nvidia-dali-cuda130"] == "2.4.0" and "nvidia-dali-cuda120" not in pins
    names = {requirement_name(line) for line in req.read_text().splitlines()}
    assert set(MMCV_RUNTIME) <= names and "opencv-python" not in names and "opencv-python-headless" in names
    assert con.name == "gpu-stack-constraints-cu13.txt"
    constraints = read_pins(con)
    assert "torch" not in constraints and "nvidia-cublas" not in constraints and "numpy" in constraints
    req12, _ = stack_requirements(12, tmp_path / "req12.txt")
    assert read_pins(req12)["nvidia-dali-cuda120"] == "2.4.0"
    assert early_names() == {"numpy", "setuptools", "wheel", "ninja", "packaging"}


def entry(name: str, *sizes: int) -> dict:
    return {"name": name, "parts": [{"name": f"{name}.{i:03d}", "size": s} for i, s in enumerate(sizes)]}


def test_bundles_hold_the_early_files_first_and_never_exceed_the_limit() -> None:
    entries = [entry("dali.whl", 60 * MiB, 60 * MiB, 10 * MiB), entry("numpy.whl", 18 * MiB),
               entry("src.tar.gz", 1 * MiB), entry("scipy.whl", 34 * MiB), entry("six.whl", 1)]  # fmt: skip
    assert bundle(entries, {"numpy.whl", "src.tar.gz"}, 60 * MiB) == 1
    where = {p["name"]: p["bundle"] for e in entries for p in e["parts"]}
    assert where["numpy.whl.000"] == where["src.tar.gz.000"] == "b01"
    assert max(bundle_sizes(entries).values()) <= 60 * MiB and len(bundle_sizes(entries)) == 4
    assert where["scipy.whl.000"] == "b01" and where["six.whl.000"] == "b01"  # 60 + 60 + (34+19+1) + 10


def test_early_files_over_one_bundle_take_the_first_bundles() -> None:
    """With the toolkit carried (`--kit-toolkit`: nvvm 59 MiB, nvcc 36 MiB) what mmcv's compile needs
    spans bundles: they come first, so the compile starts once those have travelled."""
    entries = [entry("nvvm.whl", 59 * MiB), entry("nvcc.whl", 36 * MiB), entry("numpy.whl", 18 * MiB),
               entry("dali.whl", 60 * MiB, 60 * MiB), entry("six.whl", 1 * MiB)]  # fmt: skip
    assert bundle(entries, {"nvvm.whl", "nvcc.whl", "numpy.whl"}, 60 * MiB) == 2
    where = {p["name"]: p["bundle"] for e in entries for p in e["parts"]}
    assert {where["nvvm.whl.000"], where["nvcc.whl.000"], where["numpy.whl.000"]} == {"b01", "b02"}
    assert where["dali.whl.000"] == "b03" and where["dali.whl.001"] == "b04"
    assert where["six.whl.000"] in ("b01", "b02"), "later files fill what the early bundles left"
    assert max(bundle_sizes(entries).values()) <= 60 * MiB


def bundle_sizes(entries: list[dict]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for e in entries:
        for p in e["parts"]:
            sizes[p["bundle"]] = sizes.get(p["bundle"], 0) + p["size"]
    return sizes


def test_bundled_parts_are_found_beside_the_kit_and_a_bad_bundle_name_is_refused(tmp_path: Path) -> None:
    manifest = {"format": FORMAT, "parts_dir": "gpu-stack-parts", "parts_beside": True, "files": []}
    kit = tmp_path / "gpu-stack-kit"
    assert parts_root(kit, manifest) == tmp_path / "gpu-stack-parts"
    assert part_path(tmp_path, {"name": "x.000", "bundle": "b02"}) == tmp_path / "b02" / "x.000"
    part = {"name": "x.000", "size": 1, "sha256": "0" * 64, "bundle": "../b02"}
    bad = {**manifest, "files": [{"name": "x", "size": 1, "sha256": "0" * 64, "parts": [part]}]}
    assert "bundle '../b02' is not a plain folder name" in manifest_problem(bad)


def test_the_applied_tree_is_checked_file_by_file(tmp_path: Path) -> None:
    root = tmp_path / "src"
    (root / "upstream/StreamPETR/tools").mkdir(parents=True)
    train = root / "upstream/StreamPETR/tools/train.py"
    train.write_text("patched\n")
    (root / "upstream/StreamPETR/link").symlink_to("tools/train.py")
    facts = {"files": {"upstream/StreamPETR/tools/train.py": sha256(train),
                       "upstream/StreamPETR/link": "symlink:tools/train.py"}}  # fmt: skip
    assert verify_applied(root, facts) == 2
    train.write_text("edited after apply\n")
    with pytest.raises(CheckError, match=r"upstream/StreamPETR/tools/train\.py is not what apply wrote"):
        verify_applied(root, facts)
    train.unlink()
    with pytest.raises(CheckError, match=r"tools/train\.py is not what apply wrote \(missing or changed\)"):
        verify_applied(root, facts)


@pytest.mark.parametrize(
    ("manifest", "refusal"),
    [
        ({"locks": {}}, "is a loader kit: --stack needs a stack kit"),
        ({"stack": {"python": "cp00"}}, "the stack kit is for cp00, this python is cp311"),
    ],
)
def test_the_runner_refuses_a_kit_that_is_not_a_stack_kit_for_this_python(tmp_path, manifest, refusal):
    args = argparse.Namespace(until=None)
    with pytest.raises(CheckError, match=refusal):
        run_stack(args, tmp_path, tmp_path / "work", {"tag": "cp311"}, manifest, Steps(1))
    assert not (tmp_path / "work").exists()


def test_a_stack_manifest_naming_its_files_with_paths_is_refused() -> None:
    manifest = {"format": FORMAT, "parts_dir": "p", "files": [], "stack": {"nodeps": "../x.txt",
                "source_built": "s.json", "applied": "a.tar.gz", "applied_facts": "a.json"}}  # fmt: skip
    assert manifest_problem(manifest) == "stack does not name its files by plain file names"
    assert (
        manifest_problem(json.loads(json.dumps({**manifest, "stack": {**manifest["stack"], "nodeps": "x"}})))
        is None
    )
