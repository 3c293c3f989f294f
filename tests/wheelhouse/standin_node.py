"""A stand-in for the lent GPU node's python, made from the OpenMMLab env: a venv whose only extra
packages are that env's torch and torchvision with what they need (numpy and Pillow among them),
symlinked into one folder and put on its path by a ``.pth`` file, as the node's python has its own
CUDA torch and nothing of this project.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

# Run in the OpenMMLab env: the top-level entries (a shared namespace folder such as nvidia/: its
# second level) of torch's and torchvision's installed closure.
CLOSURE = r"""
import importlib.metadata as md, json, sys
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name as canon
dists = {canon(d.metadata["Name"]): d for d in md.distributions()}
todo, seen = ["torch", "torchvision"], set()
while todo:
    name = canon(todo.pop())
    if name in seen or name not in dists:
        continue
    seen.add(name)
    for text in dists[name].requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            todo.append(req.name)
owners = {}
for name, dist in dists.items():
    for f in dist.files or []:
        owners.setdefault(f.parts[0], set()).add(name)
entries = set()
for name in seen:
    for f in dists[name].files or []:
        top = f.parts[0]
        shared = len(owners[top]) > 1 and len(f.parts) > 2
        entries.add("/".join(f.parts[:2]) if shared else top)
site = str(dists["torch"].locate_file(""))
print(json.dumps({"site": site, "entries": sorted(e for e in entries if not e.startswith(".."))}))
"""


def make_standin(upstream_python: Path, where: Path) -> Path:
    """``where/python`` (a venv) seeing the env's torch and torchvision only; its python."""
    out = subprocess.run([str(upstream_python), "-c", CLOSURE], check=True, capture_output=True, text=True)
    closure = json.loads(out.stdout)
    site, farm = Path(closure["site"]), where / "node-site"
    for entry in closure["entries"]:
        link = farm / entry
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists() and (site / entry).exists():
            link.symlink_to(site / entry)
    base = subprocess.run(
        [str(upstream_python), "-c", "import sys; print(sys._base_executable)"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    venv = where / "python"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "node_torch.pth").write_text(str(farm) + "\n")
    return venv / "bin" / "python"
