"""A throw-away single-node SLURM on this host (:class:`LocalSlurm`): munged, slurmctld and slurmd in a
temp folder, stopped (by pid) and removed on exit; clients reach it through ``env`` (``SLURM_CONF``)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .programs import SlurmUnavailable, ensure_installed, program_path, why_not_startable


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slurm_conf(state: Path, host: str, cpus: int, memory_mb: int) -> str:
    """A minimal slurm.conf: `host` is controller and the only node (all its CPUs), partition cpu."""
    ctld, slurmd = _free_port(), _free_port()
    return f"""\
ClusterName=localsmoke
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={slurmd}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={state}/munge.socket
StateSaveLocation={state}/ctld
SlurmdSpoolDir={state}/slurmd
SlurmctldPidFile={state}/slurmctld.pid
SlurmdPidFile={state}/slurmd.pid
SlurmctldLogFile={state}/slurmctld.log
SlurmdLogFile={state}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
JobRequeue=1
KillWait=5
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=cpu Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
"""


class LocalSlurm:
    """``with LocalSlurm() as slurm:`` a running single-node SLURM; ``slurm.env`` reaches it.
    ``install``: first install the programs where one is missing (:func:`ensure_installed`)."""

    Unavailable = SlurmUnavailable  # the error naming why SLURM cannot start here

    def __init__(self, startup_timeout: float = 120.0, install: bool = False) -> None:
        if install:
            ensure_installed()
        self.startup_timeout = startup_timeout
        self.state: Path | None = None
        self._popen: dict[str, subprocess.Popen] = {}  # the daemons, in the foreground (-D)
        self.env: dict[str, str] = dict(os.environ)

    def __enter__(self) -> LocalSlurm:
        reason = why_not_startable()
        if reason:
            raise SlurmUnavailable(reason)
        self.state = Path(tempfile.mkdtemp(prefix="slurm-local-"))
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, name: str, *args: str) -> None:
        assert self.state is not None
        log = (self.state / f"{name}.out").open("w")
        proc = subprocess.Popen(
            [program_path(name), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
        )
        self._popen[name] = proc

    def _start(self) -> None:
        assert self.state is not None
        state = self.state
        for sub in ("ctld", "slurmd", "munge"):
            (state / sub).mkdir(mode=0o700)
        key = state / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        host = socket.gethostname().split(".")[0]
        memory_mb = max(1024, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20 // 2)
        conf = state / "slurm.conf"
        conf.write_text(slurm_conf(state, host, os.cpu_count() or 1, memory_mb))
        self.env["SLURM_CONF"] = str(conf)
        munge = [f"--socket={state}/munge.socket", f"--key-file={key}", f"--pid-file={state}/munged.pid"]
        munge += [f"--log-file={state}/munged.log", f"--seed-file={state}/munge/seed", "--force", "-F"]
        self._spawn("munged", *munge)
        self._wait_for(lambda: (state / "munge.socket").exists(), "munged's socket")
        self._spawn("slurmctld", "-D", "-f", str(conf))
        self._spawn("slurmd", "-D", "-f", str(conf), "-N", host)
        self._wait_for(self._runs_a_task, "`srun -n1 true`")

    def _wait_for(self, ready, what: str) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            dead = [n for n, p in self._popen.items() if p.poll() is not None]
            if dead:
                raise SlurmUnavailable(f"{', '.join(dead)} exited during startup:\n{self.logs()}")
            if ready():
                return
            time.sleep(1.0)
        raise SlurmUnavailable(f"no {what} after {self.startup_timeout:.0f} s:\n{self.logs()}")

    def _runs_a_task(self) -> bool:
        try:
            done = subprocess.run(
                ["srun", "-p", "cpu", "-n1", "--immediate=5", "true"],
                env=self.env, capture_output=True, timeout=30,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0

    def logs(self, tail: int = 15) -> str:
        """The last lines of each daemon's log (for error messages)."""
        if self.state is None:
            return ""
        out = []
        for path in sorted(self.state.glob("*.log")) + sorted(self.state.glob("*.out")):
            lines = path.read_text(errors="replace").splitlines()[-tail:]
            out.append(f"--- {path.name}\n" + "\n".join(lines))
        return "\n".join(out)

    def run(self, *cmd: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        """A SLURM client command against this cluster (text output captured)."""
        done = subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, **kwargs)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
        return done

    def _cancel_all_jobs(self, timeout: float = 60.0) -> None:
        """scancel every job and wait until the queue is empty (their steps have ended)."""
        subprocess.run(["scancel", "--full", "--user=root"], env=self.env, capture_output=True, timeout=30)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            queue = subprocess.run(["squeue", "-h"], env=self.env, capture_output=True, text=True, timeout=30)
            if queue.returncode != 0 or not queue.stdout.strip():
                return
            time.sleep(1.0)

    def stop(self) -> None:
        """Cancel every job, stop the daemons this object started (slurmd, slurmctld, munged: TERM,
        then KILL after 15 s), remove the state folder."""
        popen = self._popen
        if "slurmctld" in popen and popen["slurmctld"].poll() is None:
            self._cancel_all_jobs()
        for name in ("slurmd", "slurmctld", "munged"):
            proc = popen.get(name)
            if proc is None or proc.poll() is not None:
                continue
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self._popen = {}
        if self.state is not None:
            shutil.rmtree(self.state, ignore_errors=True)
            self.state = None
