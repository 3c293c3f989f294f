"""Command line: `python -m overlaytool {fetch,apply,refresh,edit,rebase,lint}` (what the nox sessions call).

The targets are those of patches/config.toml: apply, refresh and lint take every target, or the
ones `--target NAME` names (repeatable); edit and rebase take one, StreamPETR unless named.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .checkout.gitdir import checkout_lock
from .errors import OverlayError
from .export.commit_export import commit_series
from .export.refresh import refresh_target
from .fetch import fetch, local_source
from .footprint import footprint_problems, footprint_table, series_footprint
from .gitcmd import has_commit
from .lint import folder_problems, series_problems
from .lock import TIMEOUT_ENV
from .pins import Pin
from .rebase import check as rebase_check
from .rebase import commands as rebase
from .series import read_series
from .targets import REPO_ROOT, Target, load_targets, select, select_one
from .tree.apply import apply_all, apply_target


def _pins_for_source(source: str, pins: list[Pin]) -> list[Pin]:
    """The pins a --from source can seed: by the commits a local repo holds, else by repo name."""
    path = local_source(source)  # a missing path or a non-repository is an error naming it
    if path is not None:
        return [pin for pin in pins if has_commit(path, pin.commit)]
    name = source.rstrip("/").removesuffix(".git").rsplit("/", 1)[-1].lower()
    return [pin for pin in pins if pin.slug.split("+")[1].lower() == name]


def cmd_fetch(args: argparse.Namespace) -> None:
    pins = [t.pin for t in load_targets(args.root)]
    if not args.sources:
        for pin in pins:
            print(f"{pin.name}: {pin.commit[:12]} cached in {fetch(pin)}")
        return
    for source in args.sources:
        matched = _pins_for_source(source, pins)
        if not matched:
            wanted = ", ".join(f"{p.name} {p.commit[:12]}" for p in pins)
            raise OverlayError(f"{source} holds none of the pinned commits ({wanted}).")
        for pin in matched:
            print(f"{pin.name}: {pin.commit[:12]} cached in {fetch(pin, source)}")


def cmd_apply(args: argparse.Namespace) -> None:
    targets = load_targets(args.root)
    for outcome in apply_all(targets, select(targets, args.target), force=args.force):
        target = outcome.target
        where = (
            target.checkout.relative_to(args.root)
            if target.checkout.is_relative_to(args.root)
            else target.checkout
        )
        state = "up to date, nothing changed" if outcome.up_to_date else "applied"
        print(f"{target.label} {target.pin.commit[:12]} ({target.pin.date or '?'}) at {where}: {state}")
        for i, patch in enumerate(outcome.patches, 1):
            files = ", ".join(fp.path for fp in patch.files)
            print(f"  {i:2d}. {patch.name}: {patch.subject} [{files}]")
        if outcome.overlay:  # up to date: the overlay's files are there already, none is new
            what = "file(s) in place" if outcome.up_to_date else "new file(s)"
            print(f"  overlay: {len(outcome.overlay)} {what}")


def cmd_refresh(args: argparse.Namespace) -> None:
    for target in select(load_targets(args.root), args.target):
        if not (target.checkout / ".git").exists():
            if args.target:  # named: it must be checked out (the error says how)
                refresh_target(target)
            continue  # every target: those checked out
        with checkout_lock(target.checkout, "refresh"):
            print(refresh_target(target))
            apply_target(target, force=True)


def cmd_edit(args: argparse.Namespace) -> None:
    target = select_one(load_targets(args.root), args.target)
    count = commit_series(target)
    print(
        f"{target.checkout}: {count} patch(es) are now commits on top of {target.pin.commit[:12]}.\n"
        "Edit them with git (commit --amend, rebase -i, new commits with a DEP-3 body), "
        "then run `nox -s refresh`."
    )


def cmd_rebase(args: argparse.Namespace) -> None:
    targets = load_targets(args.root)
    target = select_one(targets, args.target)
    try:
        _rebase(target, targets, args)
    except OverlayError as exc:
        if target is targets[0]:
            raise
        raise OverlayError(
            f"{exc}\n(Rebasing {target.name}: give `--target {target.name}` to every next command.)"
        ) from exc


def _rebase(target: Target, targets: list[Target], args: argparse.Namespace) -> None:
    if args.drop_file and (args.skip or args.abort or args.check or args.ref):
        raise OverlayError(
            "--drop-file goes with --continue (or alone): it resolves a missing-at-target stop"
        )
    if args.abort:
        print(rebase.abort(target))
        return
    if args.check:
        if not args.ref:
            raise OverlayError("rebase --check needs the commit or ref to check against")
        lines, carries_over = rebase_check.dry_run(target, args.ref, args.source, targets, args.report)
        print("\n".join(lines))
        if not carries_over:
            raise OverlayError(
                f"the series would not carry over to {args.ref} (nothing but its report was written)"
            )
        return
    if args.resume or args.drop_file:
        lines = rebase.resume(target, args.drop_file)
    elif args.skip:
        lines = rebase.skip(target)
    elif args.ref:
        lines = rebase.start(target, args.ref, args.source, targets)
    else:
        raise OverlayError("rebase needs a commit or ref, or --continue / --skip / --abort")
    print("\n".join(lines))


def cmd_lint(args: argparse.Namespace) -> None:
    targets = load_targets(args.root)
    problems, tables = [], []
    for target in select(targets, args.target):
        names = read_series(target.patch_dir)
        problems += series_problems(target.patch_dir, names)
        footprints = series_footprint(target.patch_dir, names)
        problems += footprint_problems(footprints, target.patch_dir)
        tables.append(footprint_table(target.label, footprints))
    if not args.target:
        problems += folder_problems(args.root, targets)
    print("\n".join(tables))
    if problems:
        raise OverlayError("The patch series is not valid:\n  " + "\n  ".join(problems))
    print("series: ok")


def _target_option(parser: argparse.ArgumentParser, every: str | None = None) -> None:
    """`--target NAME`: repeatable where `every` says what naming none takes, else one (the first)."""
    many = f"a target of patches/config.toml (default: {every})"
    one = "the target of patches/config.toml (default: the first)"
    parser.add_argument(
        "--target", action="append" if every else "store", metavar="NAME", help=many if every else one
    )


def main(argv: list[str] | None = None) -> int:
    common = argparse.ArgumentParser(add_help=False)  # options every subcommand accepts too
    common.add_argument(
        "--lock-timeout",
        type=float,
        default=argparse.SUPPRESS,
        metavar="SECONDS",
        help=f"how long to wait for another run holding a lock (default ${TIMEOUT_ENV} or 600)",
    )
    parser = argparse.ArgumentParser(prog="overlaytool", description=__doc__, parents=[common])
    parser.add_argument(
        "--root",
        type=lambda s: Path(s).resolve(),
        default=REPO_ROOT,
        help="project root (default: this checkout)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "fetch", parents=[common], help="fill the local upstream cache (from the pinned URLs or --from)"
    )
    p.add_argument("--from", dest="sources", action="append", metavar="PATH_OR_URL", default=[])
    p = sub.add_parser(
        "apply", parents=[common], help="check out the pins, apply the series, add the overlay"
    )
    p.add_argument("--force", action="store_true", help="discard local edits in the checkout")
    _target_option(p, "every target")
    p = sub.add_parser("refresh", parents=[common], help="export checkout changes back to the patch series")
    _target_option(p, "every target checked out")
    p = sub.add_parser("edit", parents=[common], help="turn the applied series into commits to edit")
    _target_option(p)
    p = sub.add_parser("lint", parents=[common], help="check the targets and their patch series")
    _target_option(p, "every target, and patches/ itself")
    p = sub.add_parser("rebase", parents=[common], help="move the series to another upstream commit")
    _target_option(p)
    p.add_argument("ref", nargs="?", help="target commit id or ref (in the cache mirror)")
    p.add_argument("--from", dest="source", metavar="PATH_OR_URL", help="seed the cache from here first")
    p.add_argument("--continue", dest="resume", action="store_true", help="go on after resolving a conflict")
    p.add_argument("--skip", action="store_true", help="drop the stopped patch from the series and go on")
    p.add_argument(
        "--drop-file",
        action="append",
        default=[],
        metavar="PATH",
        help="missing-at-target: drop the part of the stopped patch for PATH (a file the target lacks), "
        "keep its other files, and go on (repeatable; implies --continue)",
    )
    p.add_argument("--abort", action="store_true", help="give up and restore the old pin and series")
    p.add_argument("--check", action="store_true", help="dry run: print each patch's status, change nothing")
    p.add_argument(
        "--report",
        type=lambda s: Path(s).resolve(),
        metavar="JSON",
        help="--check: write the report here (the Markdown beside it) instead of upstream/rebase-report.json",
    )
    for stream in (sys.stdout, sys.stderr):  # patch subjects and paths may not fit the locale's encoding
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = parser.parse_args(argv)
    if hasattr(args, "lock_timeout"):
        os.environ[TIMEOUT_ENV] = str(args.lock_timeout)
    try:
        globals()[f"cmd_{args.command}"](args)  # the subcommand's cmd_ function
    except OverlayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
