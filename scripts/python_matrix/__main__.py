"""`python -m python_matrix`: the per-Python run of `nox -s pythons` (cold_runs.py)."""

from .cold_runs import main

raise SystemExit(main())
