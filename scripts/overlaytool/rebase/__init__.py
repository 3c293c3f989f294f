"""`rebase`: move a target's patch series to a new upstream commit, one patch at a time (docs/rebase.md).

Modules: state (the typed state), resolve (the target commit), flow (the steps the rebase and `--check`
share), replay, settle, references, report, finish, commands (start, continue, skip, abort), check.
"""
