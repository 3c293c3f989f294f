"""`rebase`: move a target's patch series to a new upstream commit, one patch at a time.

The series becomes commits on the old pin (as `edit` makes them: export/commit_export.py), then each patch
is replayed onto the target (replay.py, in the replay step of flow.py) and gets a status: `clean`,
`offset`, `merged-3way` (a three-way merge, also the way a patch follows a file upstream moved: the
status says `old → new`), `already-upstream` (dropped), `conflict` or `missing-at-target` (both
stop). A conflict the tool can settle (settle.py: the target already has the change, or only line
endings differ) is settled without a stop, with its evidence in the statuses and the report.
After the last patch the overlay's references into the rebased tree are checked
(references.py): one that does not resolve is an `overlay-reference` stop. Before anything is
written, a target commit whose tree overlaps another target's checkout or the overlay is refused
(checkout/overlap.py, which `apply` shares). Every stop writes a Markdown + JSON report
(report.py); resolve, then `--continue`, or `--skip` the patch, or `--abort`. The finish is
all-or-nothing (finish.py). The rebase and `--check` (check.py) run one sequence of steps (flow.py):
commits, target, replay, stage, check; `--check` runs it in a scratch clone, goes on past a stop and
changes nothing, the rebase ends in the finish's writes.

Modules: state (the typed state), resolve (the target commit), flow (the steps), replay, settle,
references, report, finish, commands (start, continue, skip, abort), check.
"""
