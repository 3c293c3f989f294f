"""gpu_check: the GPU tier of streampetr-dali on a bare CUDA node, from this kit folder, offline.

This file is the kit's ``gpu_check.py`` (``nox -s gpu_kits`` copies it there, with the stdlib-only
modules of ``gpukit`` beside it): ``python3 gpu_check.py [--help]`` runs :func:`gpukit.runner.main`
on the folder it stands in.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    KIT = Path(__file__).resolve().parent
    sys.path.insert(0, str(KIT))
    from gpukit.runner import main

    sys.exit(main(default_kit=KIT))
