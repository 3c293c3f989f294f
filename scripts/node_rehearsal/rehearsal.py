"""The rehearsal's parts: the stand-in node, the stack kit, docs/gpu.md's call sequence run call by
call, the checks of the build, the device budget and the report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from gpukit import Stopwatch, clean_pip_env
from interpreter import ensure_venv, supported_on_host
from overlaytool import REPO_ROOT as ROOT
from upstream_env import env_python

# The lent node (docs/gpu.md#running-it-on-a-lent-machine); requirements/node-standin.txt pins its venv
NODE = {"python": "3.12", "cuda": "13.0", "cuda_arch": "9.0", "cores": 16}
STANDIN_REQUIREMENTS = ROOT / "requirements" / "node-standin.txt"
STANDIN = ROOT / ".nox" / "_env" / f"node-{NODE['python']}"
KIT_OUT = "out/wheelhouse"  # the kit's folder in the lent machine's checkout, as docs/gpu.md carries it
UNREACHABLE = "http://127.0.0.1:9"
# the device budget (docs/gpu.md): not measurable here, so stated, and shown as such in the table
BUDGET_S = 15 * 60
START_S = 90  # a fresh machine's start
CALL_S = 15  # one call carrying a 60 MiB bundle, start to reply
LAST_CALL_PLAN_S = 8 * 60  # the last call's run after the env, as docs/gpu.md plans it (cut to fit 8 min)
# what a CPU host cannot rehearse: named in the report
ONLY_THE_NODE = (
    "the CUDA ops running on sm_90 (focal loss, ms_deform_attn) and the driver check's GPU verdict",
    "nvJPEG decoding and the DALI pipeline on LOCAL_RANK's GPU (tests/gpu), the GPU training and test runs",
    "the GPU rows of the benchmark and every GPU-side time",
    "the machine's start, each call's transfer of 60 MiB, its Python 3.12.3 (3.12 here, another micro)",
)
# the last call's options here: CPU training of the small config, one DataLoader worker
QUICK = "--quick --iters 2 --workers 1"


@dataclass(frozen=True)
class Call:
    """One call of the lent machine: the folders it carries and the command it runs there."""

    carry: tuple[str, ...]
    command: str


def calls(manifest: dict, extra: str = "", last: str = "") -> list[Call]:
    """docs/gpu.md's call sequence for a stack kit: the runner and the first bundle in call 1, a
    bundle per call; the mmcv run starts in the background with the last bundle its compile needs,
    the env run with the last bundle; one last call runs the rest in the foreground. ``extra`` goes to
    every gpu_check command, ``last`` to the last one."""
    bundles = sorted({p["bundle"] for f in manifest["files"] for p in f["parts"]})
    early = manifest["stack"]["early_bundles"]
    kit = f"{KIT_OUT}/gpu-stack-kit"
    run = f"python3 {kit}/gpu_check.py --stack{extra}"
    out: list[Call] = []
    for i, name in enumerate(bundles, 1):
        carry = ((kit,) if i == 1 else ()) + (f"{KIT_OUT}/gpu-stack-parts/{name}",)
        if i == early:
            mkdir = 'mkdir -p "$HOME"/sk && ' if i == 1 else ""
            background = '--until mmcv --work "$HOME"/sk/work > "$HOME"/sk/mmcv.log'
            tail = 'sleep 20; tail -5 "$HOME"/sk/mmcv.log'
            command = f"{mkdir}(setsid {run} {background} 2>&1 < /dev/null &) ; {tail}"
        elif i == len(bundles):
            background = '--until env --work "$HOME"/sk/work > "$HOME"/sk/env.log'
            command = f'(setsid {run} {background} 2>&1 < /dev/null &) ; sleep 5; tail -3 "$HOME"/sk/mmcv.log'
        elif i < early:  # the compile cannot start yet: the bundles that landed
            command = f"ls {KIT_OUT}/gpu-stack-parts"
        else:
            command = 'tail -2 "$HOME"/sk/mmcv.log'
        out.append(Call(carry, command))
    final = f'{run} --work "$HOME"/sk/work --results $OUT{last}; rc=$?; tail -20 "$HOME"/sk/env.log; exit $rc'
    return [*out, Call((), final)]


# Run in the env the rehearsal built: where its torch and numpy come from (upstream_env.cuda_check
# checks mmcv's CUDA build)
ENV_FACTS = """
import json, numpy, torch
print(json.dumps({"torch": torch.__version__, "torch_file": torch.__file__, "numpy": numpy.__version__,
                  "numpy_file": numpy.__file__}))
"""


class RehearsalError(Exception):
    """A step of the rehearsal failed; the message names it and where its output is."""


def timed(rows: list[dict], what: str, fn, *args):
    """``fn(*args)``, its seconds and CPU-seconds appended to ``rows``; its result."""
    print(f"node_rehearsal: {what}", flush=True)
    timer = Stopwatch()
    result = fn(*args)
    seconds, cpu = timer.read()
    rows.append({"step": what, "seconds": round(seconds, 1), "cpu_s": round(cpu, 1)})
    print(timer.done_line(seconds, cpu), flush=True)
    return result


def find_python(asked: str | None) -> str:
    """The CPython of the node's minor: ``asked``, else one this host offers; else a named refusal."""
    if asked:
        return asked
    found = supported_on_host().get(NODE["python"])
    if found is None:
        raise RehearsalError(
            f"no CPython {NODE['python']} on this host (python{NODE['python']} on PATH, pyenv, uv); the node "
            f"runs {NODE['python']}: install one (`pyenv install {NODE['python']}`, "
            f"`uv python install {NODE['python']}`) or pass --python"
        )
    return found.path


def ensure_standin(python: str) -> Path:
    """The node's own venv (its torch, torchvision, numpy), from the index; rebuilt only when its
    requirements or its Python change. Its python."""

    def run(cmd: list[str]) -> None:
        if subprocess.run(cmd).returncode != 0:
            raise RehearsalError(f"the node's venv {STANDIN}: `{' '.join(cmd)}` failed (output above)")

    installs = [("-q", "-r", STANDIN_REQUIREMENTS)]
    want = STANDIN_REQUIREMENTS.read_text()  # and the Python's version (ensure_venv): made afresh
    return ensure_venv(STANDIN, python, want, installs, run, stamp=".standin-stamp")


def node_environment(standin: Path, home: Path, results: Path) -> dict[str, str]:
    """The lent machine's shell, as far as a CPU host can give it: the stand-in's python3 first on
    PATH, its own HOME, $OUT and temp folder, no pip config, the index disabled, no network."""
    env = clean_pip_env(dict(os.environ))  # the kit's own rule: no PIP_* or pip config, no index
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(name, None)
    proxies = {k: UNREACHABLE for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
    path = os.pathsep.join([str(standin.parent), env.get("PATH", "")])
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    return {
        **env,
        **proxies,
        "PATH": path,
        "HOME": str(home),
        "OUT": str(results),
        "TMPDIR": str(home / "tmp"),
    }


def run_calls(sequence: list[Call], made: Path, node: Path, env: dict[str, str], log: Path) -> list[dict]:
    """Each call in order, as the device tool makes it: its carried folders put into ``node`` (from
    the kit folder ``made``), then its command with bash there. The last call's exit decides."""
    rows = []
    for i, call in enumerate(sequence, 1):
        for rel in call.carry:
            source = made / Path(rel).relative_to(KIT_OUT)
            shutil.copytree(source, node / rel, dirs_exist_ok=True)
        t0 = time.monotonic()
        proc = subprocess.run(["bash", "-c", call.command], cwd=node, env=env, capture_output=True, text=True)
        output = proc.stdout + proc.stderr
        with log.open("a") as fh:
            fh.write(f"### call {i}: carry {list(call.carry)}\n$ {call.command}\n{output}\n")
        seconds = round(time.monotonic() - t0, 1)
        rows.append({"call": i, "carry": list(call.carry), "seconds": seconds, "exit": proc.returncode})
        print(f"      call {i}/{len(sequence)}: {seconds:.1f} s, exit {proc.returncode}; {call.command[:90]}")
        if i == len(sequence) and proc.returncode != 0:
            raise RehearsalError(f"call {i} (the run) failed with exit {proc.returncode}; output in {log}")
    return rows


def check_the_build(
    work: Path, standin: Path, kit_numpy: str, node_env: dict[str, str]
) -> tuple[list[str], int]:
    """What the rehearsal can show of the build the node will make: ``upstream_env.cuda_check`` in the
    env (a cubin for the node's arch alone, compiled for its CUDA release, the CUDA op set, a left-out
    op refused), that env on the stand-in's torch, and the kit's numpy over the node's. A line a fact,
    and the count of units the compile had."""
    src = work / "src"
    python = env_python(root=src)
    env = {**node_env, "PYTHONPATH": str(src / "scripts"), "STREAMPETR_DALI_CACHE": str(work / "cache")}
    proc = subprocess.run(
        [str(python), "-m", "upstream_env.cuda_check"], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RehearsalError(f"upstream_env.cuda_check in the env:\n{(proc.stdout + proc.stderr)[-3000:]}")
    ops = json.loads(proc.stdout)
    sm = "sm_" + NODE["cuda_arch"].replace(".", "")
    out = subprocess.run([str(python), "-c", ENV_FACTS], capture_output=True, text=True, check=True).stdout
    facts = json.loads(out.strip().splitlines()[-1])
    problems = []
    if ops["cubins"] != [sm] or ops["compiling_cuda"] != NODE["cuda"]:
        problems.append(f"mmcv's ops: cubins {ops['cubins']}, CUDA {ops['compiling_cuda']}")
    if not Path(facts["torch_file"]).resolve().is_relative_to(standin.parents[1].resolve()):
        problems.append(f"torch comes from {facts['torch_file']}, not the stand-in's venv")
    if facts["numpy"] != kit_numpy or not Path(facts["numpy_file"]).is_relative_to(work):
        problems.append(f"numpy {facts['numpy']} from {facts['numpy_file']}, not the kit's {kit_numpy}")
    if problems:
        raise RehearsalError("the env: " + "; ".join(problems))
    return [
        f"mmcv-full: CUDA {ops['compiling_cuda']} ops ({ops['units']} units), "
        f"cubins {', '.join(ops['cubins'])} (cuobjdump), "
        f"the CUDA set {', '.join(ops['op_set'])}; a left-out op refused ({ops.get('left_out_op')})",
        f"torch {facts['torch']} of the stand-in; numpy {facts['numpy']} (the kit's) over the node's",
    ], ops["units"]


def budget(steps: dict, sequence: list[Call], units: int) -> dict:
    """The device time of the lent node's run, from this host's CPU-seconds: the compile spread over
    its units on the node's cores, the env's install at one core's pace, each starting where its call
    starts it; the machine's start, each call and the run after the env as docs/gpu.md plans them
    (only the node can measure those)."""
    starts = [(i - 1) * CALL_S for i in range(1, len(sequence) + 1)]  # each call's start, from call 1's
    mmcv_call = next(i for i, c in enumerate(sequence) if "--until mmcv" in c.command)
    env_call = next(i for i, c in enumerate(sequence) if "--until env" in c.command)
    mmcv = steps["mmcv"]["cpu_s"] / min(NODE["cores"], units)
    env = steps["env"]["cpu_s"]
    env_end = max(starts[mmcv_call] + mmcv, starts[env_call]) + env  # the env run waits for the compile
    env_left = max(0.0, env_end - starts[-1])  # what the last call waits for before its run
    total = START_S + starts[-1] + env_left + LAST_CALL_PLAN_S
    return {"mmcv_node_s": round(mmcv), "env_node_s": round(env), "env_left_s": round(env_left),
            "start_s": START_S, "calls": len(sequence), "call_s": CALL_S,
            "last_call_plan_s": LAST_CALL_PLAN_S, "total_s": round(total), "budget_s": BUDGET_S,
            "margin_s": round(BUDGET_S - total)}  # fmt: skip


def report(host: list[dict], call_rows: list[dict], steps: dict, plan: dict, facts: list[str]) -> str:
    """The step table (markdown) and the budget it implies."""
    gpu = ("tests", "train_dali", "train_torch", "evaluate", "bench")
    lines = ["| step | seconds here | CPU-s here | on the node (16 cores) |", "|---|---:|---:|---|"]
    lines += [f"| {r['step']} | {r['seconds']:.0f} | {r['cpu_s']:.0f} | not on the node |" for r in host]
    for r in call_rows:
        carry = ", ".join(Path(c).name for c in r["carry"]) or "nothing"
        last = r["call"] == len(call_rows)
        node = (
            f"the env's rest + the run ({plan['last_call_plan_s']} s planned)"
            if last
            else f"~{CALL_S} s planned"
        )
        lines.append(f"| call {r['call']} (carries {carry}) | {r['seconds']:.0f} | | {node} |")
    for name, s in steps.items():
        if name == "mmcv":
            node = f"~{plan['mmcv_node_s']} s (CPU-s over the compile's units), in the background"
        elif name in gpu:
            node = "on the GPU: only the node can show"
        else:
            node = f"~{s['cpu_s']:.0f} s (one core)"
        lines.append(f"| {name} | {s['seconds']:.0f} | {s.get('cpu_s', 0):.0f} | {node} |")
    p = plan
    lines += [
        "",
        f"Budget: start {p['start_s']} s + {p['calls'] - 1} calls x {p['call_s']} s + the env's rest "
        f"{p['env_left_s']} s + the run {p['last_call_plan_s']} s as planned = {p['total_s']} s of "
        f"{p['budget_s']} s ({p['margin_s']} s to spare).",
        "",
        *[f"- {f}" for f in facts],
        "",
        "Only the node can show:",
        *[f"- {f}" for f in ONLY_THE_NODE],
    ]
    return "\n".join(lines) + "\n"


def keep_logs(sk: Path, logs: Path) -> None:
    """The node's logs (the background runs' and every step's) into ``logs``."""
    logs.mkdir(exist_ok=True)
    for log in [*sk.glob("*.log"), *(sk / "work" / "logs").glob("*.log")]:
        shutil.copy2(log, logs / (log.name if log.parent == sk else f"step-{log.name}"))


def make_kit(made: Path, with_toolkit: bool, log: Path) -> dict:
    """The stack kit as docs/gpu.md makes it for the lent node (``--kit-toolkit`` where this host has no
    nvcc of the node's release); its manifest."""
    cmd = [sys.executable, "-m", "gpu_kits", "--out", str(made), "--only", "stack-kit", "--kit-python",
           NODE["python"], "--cuda", NODE["cuda"].split(".")[0],
           "--cuda-arch", NODE["cuda_arch"]]  # fmt: skip
    cmd += ["--kit-toolkit"] if with_toolkit else []
    with log.open("w") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RehearsalError(f"making the stack kit failed (exit {proc.returncode}); output in {log}")
    return json.loads((made / "gpu-stack-kit" / "manifest.json").read_text())
