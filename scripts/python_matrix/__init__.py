"""`nox -s pythons`: the per-Python cold-run matrix (docs/upstream-env.md#pythons).

- :mod:`.cold_runs`  ``python -m python_matrix``: one cold run per Python, the table and `pythons.json`

A command-line package: it names nothing for others.
"""
