"""`nox -s pythons`: the per-Python cold-run matrix. For each supported CPython this host has, a fresh
clone of HEAD runs the README's set-up, a cold `nox -s train_dali`, lint and the hermetic tier as a
newcomer whose python3 is that Python would (docs/upstream-env.md#pythons).

- :mod:`.cold_runs`  ``python -m python_matrix``: one cold run per Python, the table and `pythons.json`

A command-line package: it names nothing for others. It takes the Pythons from ``interpreter``'s face
(which chooses the one the envs are built with) and runs nothing of it.
"""
