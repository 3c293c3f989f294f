"""Shared by the claim tests: a job that runs from an env in a process of its own, holding a claim on
it through `upstream_env.claim_env` as a session does, until the test lets it end (or kills it); and
the env's files as a job sees them (`snapshot`)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE.parents[1] / "scripts"
JOB = """
import sys, time
from pathlib import Path
import claim_jobs
from upstream_env import claims
env, session, host, go = Path(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
if host:
    claims._host = lambda: host  # another node of the cluster
with claims.claim_env(session, env=env) as claim:
    before = claim_jobs.snapshot(env)
    print("claimed", claim.name, flush=True)
    while not go.exists():
        time.sleep(0.02)
    after = claim_jobs.snapshot(env)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
print("changed while it ran:", changed, flush=True)
"""


def snapshot(env: Path) -> dict[str, tuple[int, int, str]]:
    """Every file of the env's mmcv-full (its dist-info and RECORD too) and the stamp: path ->
    (inode, mtime in ns, sha256); a reinstall of the same bytes changes the inode."""
    files = [*env.glob("lib/python*/site-packages/mmcv*/**/*"), env / ".upstream-env.json"]
    out = {}
    for path in files:
        if path.is_file():
            st = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out[str(path.relative_to(env))] = (st.st_ino, st.st_mtime_ns, digest)
    return out


class Job:
    """A process holding a claim on `env` (as `session`, on `host` when given) until `finish` or `kill`."""

    def __init__(self, env: Path, session: str, tmp: Path, host: str = "") -> None:
        self.go = tmp / f"go-{session}-{host or 'here'}"
        env_vars = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SCRIPTS), str(HERE)])}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", JOB, str(env), session, host, str(self.go)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_vars,
        )  # fmt: skip
        self.pid = self.proc.pid
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        assert line.startswith("claimed "), f"the job did not claim the env: {line!r} {self.proc.stderr}"
        self.claim = line.split()[1]

    def finish(self, timeout: float = 60) -> str:
        """Let the job end; its output after the claim ("changed while it ran: [...]")."""
        self.go.write_text("")
        out, err = self.proc.communicate(timeout=timeout)
        assert self.proc.returncode == 0, err
        return out

    def kill(self) -> None:
        self.proc.kill()
        self.proc.communicate(timeout=60)
