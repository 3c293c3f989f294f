"""The watch summary's Markdown: each patch's flags as the check reported them."""

from __future__ import annotations

from forkwatch.watch_summary import markdown


def test_the_markdown_marks_a_provisional_stop_that_may_be_an_artefact() -> None:
    patches = [
        {
            "name": "late.patch",
            "status": "conflict",
            "moves": [],
            "provisional": True,
            "may_be_artefact": True,
        },
        {
            "name": "other.patch",
            "status": "conflict",
            "moves": [],
            "provisional": True,
            "may_be_artefact": False,
        },
    ]
    source = {"name": "fork", "url": "u", "branch": "main", "state": "stops", "target_commit": "b" * 40}
    stop = {"kind": "conflict", "patch": "model.patch", "paths": []}
    entry = {**source, "patches": patches, "would_stop": stop, "message": "", "vet": None}
    pin = {"name": "StreamPETR", "commit": "a" * 40}
    summary = {"generated": "now", "pin": pin, "previous": None, "changes": [], "sources": [entry]}
    rows = [line for line in markdown(summary).splitlines() if line.startswith(("| late", "| other"))]
    assert rows == [
        "| late.patch | conflict *provisional* *may be an artefact of a patch left out* |",
        "| other.patch | conflict *provisional* |",
    ]
