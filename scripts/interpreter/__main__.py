"""`python -m interpreter`: the per-Python run of `nox -s pythons` (matrix.py)."""

from .matrix import main

raise SystemExit(main())
