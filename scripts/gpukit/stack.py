"""``gpu_check.py --stack``: the whole stack on a node that has only a driver, Python and a CUDA torch.

From a stack kit (``nox -s gpu_kits -- --only stack-kit``; stdlib only, like the rest of the runner):

1. ``parts``   verify and reassemble the parts (``--until mmcv``: only the first bundle's files), unpack
   the project's sources and the applied upstream tree, and check every file of that tree against
   the digests ``apply`` left where the kit was made (the node needs no git);
2. ``mmcv``    compile mmcv-full against the node's torch (``upstream_env mmcv-wheel --torch-from``,
   through ``wheelhouse.node_env``: the kit's wheels, index disabled);
3. ``env``     the OpenMMLab env on the node's torch (``upstream_env build --torch-from`` with the same
   choices: it reuses that wheel);
4. ``check``   the driver check (``tools/tool_hooks/driver_check.py --dali``): with a GPU it must say ``GPU``;
5. ``data``    the synthetic data set;
6. ``tests``   ``tests/gpu -m gpu`` (the loader's GPU tests and two training iterations on the GPU);
7. ``train_dali``, ``train_torch``  ``upstream_run train`` on each loader (DALI with mixed decoding
   on a GPU);
8. ``evaluate``  the DALI checkpoint with both test loaders;
9. ``bench``   ``loaderbench``: DALI on the GPU vs the DataLoader at each worker count, r50 and accv.

Every step records its command, seconds and outcome in ``<results>/stack-run.json``; a finished step
is stamped in the work folder and skipped when run again with the same kit, so ``--until mmcv`` and
``--until env`` can run in the background while parts still travel and the last run picks up there.
One run at a time holds the work folder's lock (a later one waits for it).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

from .parts import reassemble, sha256, unpack
from .steps import CheckError, Stopwatch

STEPS = ("parts", "mmcv", "env", "check", "data", "tests", "train_dali", "train_torch", "evaluate", "bench")
# --quick: 4 scenes (3 training scenes: the 8 streams of the ACCV-like batch) of 4 key frames
QUICK_DATA = ["--scenes", "4", "--samples-per-scene", "4"]
TAIL = 3000  # characters of a failed step's output kept in stack-run.json


class Stack:
    """The stack steps over one work folder: stamps, the summary JSON, the commands' environment."""

    def __init__(self, args, kit: Path, work: Path, node: dict, manifest: dict) -> None:
        self.args, self.kit, self.work, self.node, self.manifest = args, kit, work, node, manifest
        self.src, self.wheelhouse = work / "src", work / "wheelhouse"
        self.results = (args.results or work / "results").resolve()
        self.results.mkdir(parents=True, exist_ok=True)
        self.env_dir = self.src / ".nox" / "_env" / "upstream"  # where upstream_run looks for the env
        self.vpy = self.env_dir / "bin" / "python"
        self.data = args.data_root.resolve() if args.data_root else work / "data"
        self.runs = work / "runs"
        self.gpu = bool(node["cuda_available"])
        self.kit_id = sha256(kit / "manifest.json")
        self.summary_path = work / "stack-run.json"  # every run's steps; copied to the results
        self.summary = {"node": node, "kit": {"manifest_sha256": self.kit_id, **manifest["stack"]},
                        "options": {"iters": args.iters, "quick": args.quick}, "steps": {}}  # fmt: skip
        if self.summary_path.exists():
            previous = json.loads(self.summary_path.read_text())
            if previous.get("kit", {}).get("manifest_sha256") == self.kit_id:
                self.summary["steps"] = previous.get("steps", {})

    # --- bookkeeping ---------------------------------------------------------------------------

    def stamp_path(self, step: str) -> Path:
        return self.work / "done" / step

    def done(self, step: str) -> bool:
        path = self.stamp_path(step)
        return path.is_file() and path.read_text() == self.kit_id

    def record(self, step: str, **facts) -> None:
        self.summary["steps"][step] = {**self.summary["steps"].get(step, {}), **facts}
        text = json.dumps(self.summary, indent=1, default=str) + "\n"
        for path in (self.summary_path, self.results / "stack-run.json"):
            path.write_text(text)

    def env(self) -> dict[str, str]:
        paths = [self.src / p for p in ("scripts", "overlay", "tests")]
        return {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths)),
                "STREAMPETR_DALI_CACHE": str(self.work / "cache")}  # fmt: skip

    def run(self, step: str, cmd: list, *, extra_env: dict[str, str] | None = None) -> str:
        """``cmd`` in the sources, its output to ``<work>/logs/<step>.log``; a failure raises with it."""
        log = self.work / "logs" / f"{step}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        words = [str(c) for c in cmd]
        self.record(step, command=" ".join(words))
        with log.open("a") as fh:
            fh.write("$ " + " ".join(words) + "\n")
            fh.flush()
            env = {**self.env(), **(extra_env or {})}
            proc = subprocess.run(words, cwd=self.src, env=env, stdout=fh, stderr=subprocess.STDOUT)
        output = log.read_text(errors="replace")
        if proc.returncode != 0:
            self.record(step, ok=False, exit=proc.returncode, tail=output[-TAIL:])
            raise CheckError(f"{step}: exit {proc.returncode}; log {log}:\n{output[-TAIL:]}")
        return output

    # --- the steps -----------------------------------------------------------------------------

    def parts(self, early_only: bool) -> None:
        stack = self.manifest["stack"]
        only = set(stack["early"]) if early_only else None
        files = reassemble(
            self.kit, self.manifest, self.wheelhouse, self.wheelhouse / "locks", only, self.args.parts
        )
        for name in (stack["applied"], self.manifest["source"]):
            (self.wheelhouse / "locks" / name).replace(self.work / name)
        sdist = json.loads((self.wheelhouse / "locks" / stack["source_built"]).read_text())["sdist"]
        if (self.wheelhouse / "locks" / sdist).exists():
            (self.wheelhouse / "locks" / sdist).replace(self.wheelhouse / sdist)
        if not self.done("sources"):
            shutil.rmtree(self.src, ignore_errors=True)
            unpack(self.work / self.manifest["source"], self.src)
            unpack(self.work / stack["applied"], self.src)
            facts = json.loads((self.wheelhouse / "locks" / stack["applied_facts"]).read_text())
            checked = verify_applied(self.src, facts)
            self.record(
                "parts", applied_files=checked, pins=facts["pins"], apply_digest=facts["apply_digest"]
            )
            self.stamp("sources")
        size = sum(f.stat().st_size for f in files if f.exists())
        print(
            f"      {len(files)} files, {size / 2**20:.0f} MiB verified; the applied tree matches its digests"
        )

    def node_env(self, step: str, command: str) -> None:
        """``upstream_env <command>`` (``mmcv-wheel`` or ``build``) on the node's torch, offline; both
        steps pass the same choices, so ``build`` finds the wheel ``mmcv-wheel`` compiled."""
        cuda = self.gpu or self.args.cuda_ops
        ops = ["--cuda", "--cuda-arch", self.args.cuda_arch] if cuda else ["--no-cuda"]
        cmd = [self.args.python, "-m", "wheelhouse.node_env", command, "--wheelhouse", self.wheelhouse]
        self.run(step, [*cmd, "--env", self.env_dir, "--torch-from", self.args.python, *ops])

    def check(self) -> None:
        out = self.run(
            "check", [self.vpy, self.src / "upstream/StreamPETR/tools/tool_hooks/driver_check.py", "--dali"]
        )
        verdict = next((ln for ln in reversed(out.splitlines()) if ln.startswith("driver_check: ")), "")
        self.record("check", verdict=verdict)
        if self.gpu != verdict.startswith("driver_check: GPU"):
            raise CheckError(
                f"check: the node's torch {'sees' if self.gpu else 'sees no'} GPU, yet {verdict!r}"
            )
        print(f"      {verdict}")

    def data_set(self) -> None:
        if self.args.data_root is None:
            size = QUICK_DATA if self.args.quick else []
            self.run("data", [self.vpy, "-m", "synthdata", "--out", self.data, *size])

    def tests(self) -> None:
        cmd = [self.vpy, "-m", "pytest", "-p", "gpukit.plugin", "--noconftest", "-p", "no:cacheprovider",
               "-m", "gpu", "-q", "-rA", "tests/gpu", "--junitxml", self.results / "tests.xml"]  # fmt: skip
        self.run("tests", cmd, extra_env={"GPU_CHECK_DATA": str(self.data)})

    def train(self, loader: str) -> None:
        step, work_dir = f"train_{loader}", self.runs / f"train_{loader}"
        cmd = [self.vpy, "-m", "upstream_run", "train", "--loader", loader, "--iters", self.args.iters,
               "--config", self.args.config, "--data-root", self.data, "--work-dir", work_dir]  # fmt: skip
        if loader == "dali" and self.gpu:
            cmd += ["--cfg-options", "data_loading_config.device=gpu"]  # mixed (nvJPEG) decoding
        if loader == "torch":
            cmd += ["--workers", str(self.args.workers)]
        out = self.run(step, cmd)
        # upstream_run's checks of the run: the losses (check_run), the DALI slots' split (slots)
        checks = [ln.strip() for ln in out.splitlines() if ln.startswith(f"{step}: ")]
        self.record(step, checks=checks)

    def evaluate(self) -> None:
        checkpoint = self.runs / "train_dali" / f"iter_{self.args.iters}.pth"
        metrics = {}
        for loader in ("dali", "torch"):
            cmd = [self.vpy, "-m", "upstream_run", "evaluate", checkpoint, "--data-root", self.data,
                   "--loader", loader, "--out", self.runs / f"eval_{loader}"]  # fmt: skip
            out = self.run("evaluate", cmd)
            metrics[loader] = [ln.strip() for ln in out.splitlines() if ln.startswith(("mAP:", "NDS:"))]
        self.record("evaluate", metrics=metrics)

    def bench(self) -> None:
        q, a = self.args.quick, self.args
        cmd = [self.vpy, "-m", "loaderbench", "--out", self.results, "--no-variants", "--no-floor",
               "--gpu", "yes" if self.gpu else "no", "--profiles", "r50" if q else "r50,accv",
               "--workers", "1" if q else a.bench_workers, "--threads", "1" if q else a.bench_threads,
               "--batches", "1" if q else "4", "--repeats", "1" if q else "2", "--warmup", "1",
               "--handover-calls", "1" if q else "2", "--step-s", "0.2" if q else "0.5"]  # fmt: skip
        cmd += ["--data-root", self.data] + (["--no-dali-cpu"] if self.gpu else [])  # GPU: DALI vs DataLoader
        self.run("bench", cmd)

    def stamp(self, step: str) -> None:
        self.stamp_path(step).parent.mkdir(parents=True, exist_ok=True)
        self.stamp_path(step).write_text(self.kit_id)


def verify_applied(root: Path, facts: dict) -> int:
    """Every file of the applied tree as ``apply`` wrote it where the kit was made; its count."""
    for name, want in facts["files"].items():
        path = root / name
        if want.startswith("symlink:"):
            ok = path.is_symlink() and str(path.readlink()) == want[len("symlink:") :]
        else:
            ok = path.is_file() and not path.is_symlink() and sha256(path) == want
        if not ok:
            raise CheckError(
                f"applied tree: {name} is not what apply wrote (missing or changed); copy the kit again"
            )
    return len(facts["files"])


def run_stack(args, kit: Path, work: Path, node: dict, manifest: dict, steps) -> Path:
    """The stack steps up to ``args.until``, skipping those already stamped; the results' summary."""
    if "stack" not in manifest:
        raise CheckError(f"{kit / 'manifest.json'} is a loader kit: --stack needs a stack kit (docs/gpu.md)")
    if node["tag"] != manifest["stack"]["python"]:
        raise CheckError(f"the stack kit is for {manifest['stack']['python']}, this python is {node['tag']}")
    work.mkdir(parents=True, exist_ok=True)
    with (work / ".gpu_check.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a background --until run finishes first
        stack = Stack(args, kit, work, node, manifest)
        until = STEPS.index(args.until) if args.until else len(STEPS) - 1
        actions = {
            "parts": lambda: stack.parts(early_only=args.until == "mmcv"),
            "mmcv": lambda: stack.node_env("mmcv", "mmcv-wheel"),
            "env": lambda: stack.node_env("env", "build"),
            "check": stack.check,
            "data": stack.data_set,
            "tests": stack.tests,
            "train_dali": lambda: stack.train("dali"),
            "train_torch": lambda: stack.train("torch"),
            "evaluate": stack.evaluate,
            "bench": stack.bench,
        }
        for name in STEPS[: until + 1]:
            started = steps.begin(name)
            if stack.done(name) and name != "parts":
                print("      done before (same kit): skipped")
                continue
            timer = Stopwatch()
            actions[name]()
            seconds, cpu = timer.read()
            stack.record(name, ok=True, seconds=round(seconds, 1), cpu_s=round(cpu, 1))
            if name != "parts" or args.until != "mmcv":
                stack.stamp(name)
            steps.end(name, started)
    return stack.results / "stack-run.json"
