"""gpu_check: the GPU tier of streampetr-dali on a bare CUDA node, from a kit folder, offline.

``python3 gpu_check.py`` (this file, copied into the kit by ``nox -s wheelhouse``), run with a
Python 3.11/3.12 that has a CUDA build of torch. Stdlib only. Steps:

1. verify every part against ``manifest.json`` (a part with a wrong size or hash is refused, by
   name) and reassemble the wheels, the lock and the project's sources;
2. a venv with the loader's packages installed from those wheels only (``--no-index``, hashes
   required, no pip config), and a ``.pth`` file that reuses this interpreter's torch;
3. the synthetic data set;
4. ``tests/gpu``'s loader tests (``-m "gpu and not stack"``: nothing of the mmcv stack);
5. the loader benchmark, DALI on the GPU vs DALI on the CPU (``loaderbench.kit``): JSON + PNG.

Without a CUDA device the GPU half (the tests' GPU asserts, the benchmark's GPU rows) is skipped
with one line and the rest runs. Exit status 0 only when every step passed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

MANIFEST = "manifest.json"
# --quick: 4 scenes (3 training scenes: the 8 streams of the ACCV-like batch) of 4 key frames.
QUICK_DATA = ["--scenes", "4", "--samples-per-scene", "4"]
FORMAT = 1
PROBE = (
    "import json, sys, sysconfig, torch; from pathlib import Path; "
    "cuda = torch.cuda.is_available(); print(json.dumps({"
    "'tag': 'cp%d%d' % sys.version_info[:2], 'torch': torch.__version__, 'torch_cuda': torch.version.cuda, "
    "'cuda_available': cuda, 'devices': torch.cuda.device_count() if cuda else 0, "
    "'gpu': torch.cuda.get_device_name(0) if cuda else None, "
    "'torch_site': str(Path(torch.__file__).resolve().parents[1])}))"
)
VENV_CHECK = (
    "import json, sys, numpy, torch, nvidia.dali as dali, PIL; print(json.dumps({"
    "'numpy': numpy.__version__, 'numpy_file': numpy.__file__, 'dali': dali.__version__, "
    "'dali_file': dali.__file__, 'torch': torch.__version__, 'torch_file': torch.__file__, "
    "'cuda_available': torch.cuda.is_available(), "
    "'cuda_tensor': bool(torch.cuda.is_available() and torch.ones(2, device='cuda').sum().item() == 2)}))"
)


class CheckError(Exception):
    """A failed step; the message says what and where."""


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def load_manifest(kit: Path) -> dict:
    try:
        manifest = json.loads((kit / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise CheckError(f"{kit / MANIFEST}: unreadable ({exc}); is {kit} a gpu_check kit?") from None
    if manifest.get("format") != FORMAT:
        raise CheckError(f"{kit / MANIFEST}: format {manifest.get('format')!r}, this runner reads {FORMAT}")
    return manifest


def verify_part(part: Path, want: dict) -> None:
    """Refuse a missing part, or one whose size or sha256 differs from the manifest, naming it."""
    if not part.is_file():
        raise CheckError(f"part {part.name} is missing from {part.parent}; copy it again")
    size = part.stat().st_size
    if size != want["size"]:
        raise CheckError(f"part {part.name}: {size} bytes, the manifest says {want['size']}; copy it again")
    digest = sha256(part)
    if digest != want["sha256"]:
        raise CheckError(
            f"part {part.name}: sha256 {digest} != manifest {want['sha256']}; refusing it, copy it again"
        )


def reassemble(kit: Path, manifest: dict, wheels: Path, other: Path) -> list[Path]:
    """Every file of the manifest rebuilt from its verified parts, then verified whole: the wheels
    under ``wheels`` (pip's --find-links), the locks and the sources under ``other``."""
    out = []
    for entry in manifest["files"]:
        dest = wheels if entry["name"].endswith(".whl") else other
        dest.mkdir(parents=True, exist_ok=True)
        target = dest / entry["name"]
        partial = target.with_name(target.name + ".partial")
        partial.unlink(missing_ok=True)
        for want in entry["parts"]:
            verify_part(kit / manifest["parts_dir"] / want["name"], want)
        first = kit / manifest["parts_dir"] / entry["parts"][0]["name"]
        if len(entry["parts"]) == 1 and entry["parts"][0]["sha256"] == entry["sha256"]:
            link_or_copy(first, partial)  # the part is the file, verified above
        else:
            with partial.open("wb") as fh:
                for want in entry["parts"]:
                    with (kit / manifest["parts_dir"] / want["name"]).open("rb") as src:
                        shutil.copyfileobj(src, fh, 1 << 20)
        digest = sha256(partial) if len(entry["parts"]) > 1 else entry["sha256"]
        if digest != entry["sha256"]:
            partial.unlink()
            raise CheckError(f"{entry['name']}: reassembled sha256 {digest} != manifest {entry['sha256']}")
        partial.replace(target)
        out.append(target)
    return out


def link_or_copy(src: Path, dest: Path) -> None:
    """A hard link where the file system allows (the kit's parts stay untouched: pip only reads)."""
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)


def unpack(archive: Path, dest: Path) -> None:
    """Extract the sources (the "data" filter where this Python has it: 3.11.4+, 3.12)."""
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
        else:
            tar.extractall(dest)  # noqa: S202 (our own archive, hash-verified above)


def clean_pip_env(base: dict[str, str]) -> dict[str, str]:
    """The environment for pip: no PIP_* settings or pip config of the machine, the index disabled."""
    env = {k: v for k, v in base.items() if not k.startswith("PIP_")}
    env.update(PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


class Steps:
    """Numbered steps with their times; a failed step is recorded and named at the end."""

    def __init__(self, total: int) -> None:
        self.total, self.n, self.failed, self.times = total, 0, [], {}

    def begin(self, title: str) -> float:
        self.n += 1
        print(f"[{self.n}/{self.total}] {title}", flush=True)
        return time.monotonic()

    def end(self, title: str, started: float) -> None:
        self.times[title] = round(time.monotonic() - started, 1)
        print(f"      done in {self.times[title]:.1f} s", flush=True)


def run(cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, what: str) -> str:
    """Run ``cmd``, its output shown; raise CheckError naming ``what`` on a non-zero exit."""
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, text=True, capture_output=True)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise CheckError(f"{what} failed (exit {proc.returncode}):\n{output[-4000:]}")
    return output


def probe(python: str) -> dict:
    try:
        out = run([python, "-c", PROBE], what=f"{python}: import torch")
    except CheckError as exc:
        raise CheckError(
            f"{exc}\nThe kit reuses the node's torch: run it with a python that has torch."
        ) from None
    return json.loads(out.strip().splitlines()[-1])


def make_venv(python: str, venv: Path, wheels: Path, lock: Path, torch_site: str) -> dict:
    """The kit's venv: the lock installed from ``wheels`` only, then a .pth to the node's torch."""
    if venv.exists():
        shutil.rmtree(venv)
    run([python, "-m", "venv", venv], what="python -m venv (Debian/Ubuntu: the python3-venv package)")
    vpy = venv / "bin" / "python"
    pip = [vpy, "-m", "pip", "install", "-q", "--no-compile", "--no-index", "--find-links", wheels]
    pip.append("--require-hashes")
    run([*pip, "-r", lock], env=clean_pip_env(dict(os.environ)), what=f"pip install -r {lock.name} (offline)")
    purelib = run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], what="venv paths")
    (Path(purelib.strip().splitlines()[-1]) / "_gpu_check_node_torch.pth").write_text(torch_site + "\n")
    info = json.loads(run([vpy, "-c", VENV_CHECK], what="import check in the venv").strip().splitlines()[-1])
    for name in ("numpy_file", "dali_file"):
        if not Path(info[name]).resolve().is_relative_to(venv.resolve()):
            raise CheckError(f"venv: {name.split('_')[0]} comes from {info[name]}, not from the kit's venv")
    return info


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(prog="gpu_check", description=__doc__.split("\n\n")[0])
    ap.add_argument("--kit", type=Path, default=here, help="the kit folder (default: this file's)")
    ap.add_argument("--work", type=Path, default=None, help="work folder (default: <kit>/work)")
    ap.add_argument("--python", default=sys.executable, help="a python with the node's torch (default: this)")
    ap.add_argument("--threads", default="1,2,4,8,16", help="DALI thread counts, capped at the cores")
    ap.add_argument("--quick", action="store_true", help="a short benchmark (CI: the CPU half in a minute)")
    ap.add_argument("--data-root", type=Path, default=None, help="an existing synthetic data set to reuse")
    ap.add_argument(
        "--allow-cuda-mismatch", action="store_true",
        help="run although the kit's DALI is for another CUDA major than the node's torch",
    )  # fmt: skip
    args = ap.parse_args(argv)
    kit = args.kit.resolve()
    work = (args.work or kit / "work").resolve()
    steps = Steps(6)
    t0 = time.monotonic()
    try:
        started = steps.begin("the node's python and torch")
        node = probe(args.python)
        manifest = load_manifest(kit)
        print(
            f"      {node['tag']}, torch {node['torch']} (CUDA {node['torch_cuda']}), "
            f"{node['devices']} GPU(s){': ' + node['gpu'] if node['gpu'] else ''}; "
            f"kit: DALI for CUDA {manifest['dali_cuda']}, wheels for {', '.join(manifest['locks'])}"
        )
        if node["tag"] not in manifest["locks"]:
            raise CheckError(
                f"the kit holds wheels for {', '.join(manifest['locks'])}, this python is {node['tag']}; "
                "build one for it: nox -s wheelhouse -- --kit-python X.Y"
            )
        torch_major = (node["torch_cuda"] or "").split(".")[0]
        if torch_major and torch_major != str(manifest["dali_cuda"]) and not args.allow_cuda_mismatch:
            raise CheckError(
                f"the node's torch is built for CUDA {torch_major}, the kit's DALI for CUDA "
                f"{manifest['dali_cuda']}: build the kit with `nox -s wheelhouse -- --cuda {torch_major}` "
                "(or pass --allow-cuda-mismatch)"
            )
        steps.end("probe", started)

        started = steps.begin(
            f"verify and reassemble {sum(len(f['parts']) for f in manifest['files'])} parts"
        )
        files = reassemble(kit, manifest, work / "wheels", work / "kit")
        source = work / "kit" / manifest["source"]
        src = work / "src"
        shutil.rmtree(src, ignore_errors=True)
        unpack(source, src)
        print(f"      {len(files)} files, {sum(f.stat().st_size for f in files) / 2**20:.0f} MiB verified")
        steps.end("reassemble", started)

        started = steps.begin("venv from the kit's wheels (index disabled), reusing the node's torch")
        lock = work / "kit" / manifest["locks"][node["tag"]]
        venv_info = make_venv(args.python, work / "venv", work / "wheels", lock, node["torch_site"])
        print(f"      DALI {venv_info['dali']}, numpy {venv_info['numpy']}, torch {venv_info['torch']}")
        if (
            venv_info["cuda_available"] != node["cuda_available"]
            or venv_info["cuda_tensor"] != node["cuda_available"]
        ):
            raise CheckError("torch uses CUDA outside the venv but not inside it (its libraries shadowed?)")
        steps.end("venv", started)
        vpy = str(work / "venv" / "bin" / "python")
        # tests/ too: the GPU tests import its helpers (tests/conftest.py is not loaded here)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(str(src / p) for p in ("scripts", "overlay", "tests")),
        }

        started = steps.begin("the synthetic data set")
        data = args.data_root.resolve() if args.data_root else work / "data"
        if args.data_root is None:
            size = QUICK_DATA if args.quick else []
            made = run([vpy, "-m", "synthdata", "--out", data, *size], env=env, what="synthdata")
            print("      " + made.strip())
        steps.end("data", started)

        gpu = node["cuda_available"]
        if not gpu:
            print("GPU half skipped: torch sees no CUDA device (the GPU tests skip; no GPU benchmark rows)")
        failures = []
        started = steps.begin('tests/gpu -m "gpu and not stack"')
        tests = [vpy, "-m", "pytest", "-p", "gpukit.plugin", "--noconftest", "-p", "no:cacheprovider"]
        tests += ["-m", "gpu and not stack", "-q", "tests/gpu", "--junitxml", work / "results" / "tests.xml"]
        tests += ["-rA"] if gpu else []
        proc = subprocess.run([str(c) for c in tests], cwd=src, env={**env, "GPU_CHECK_DATA": str(data)})
        if proc.returncode != 0:
            failures.append(f"tests/gpu (exit {proc.returncode})")
        steps.end("tests", started)

        started = steps.begin("loader benchmark: DALI GPU vs DALI CPU")
        bench = [vpy, "-m", "loaderbench.kit", "--data-root", data, "--out", work / "results"]
        bench += ["--threads", args.threads, *(["--quick"] if args.quick else [])]
        proc = subprocess.run([str(c) for c in bench], cwd=src, env=env)
        if proc.returncode != 0:
            failures.append(f"benchmark (exit {proc.returncode})")
        steps.end("bench", started)
        if failures:
            raise CheckError("failed: " + "; ".join(failures))
    except CheckError as exc:
        print(f"gpu_check FAILED after {time.monotonic() - t0:.0f} s: {exc}", file=sys.stderr)
        return 1
    half = "GPU and CPU" if gpu else "CPU half only (no CUDA device)"
    print(f"gpu_check PASSED ({half}) in {time.monotonic() - t0:.0f} s; results in {work / 'results'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
