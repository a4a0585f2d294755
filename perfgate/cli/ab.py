"""`perfgate ab REF|--anchor [-- PYTEST_ARGS]` and `perfgate bisect GOOD BAD [-k CASE] [-- PYTEST_ARGS]`: A/B mode
without a pytest parent (the work is perfgate.ab.run and perfgate.ab.bisect, the same as `pytest --perfgate-base`)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from perfgate.cli.settings import command_settings


def ab(args: argparse.Namespace) -> int:
    from perfgate.ab.run import run_ab
    from perfgate.ab.setup import AbRequest

    if bool(args.ref) == bool(args.anchor):
        args.command_parser.error("name the base: a REF, or --anchor (the baseline's calibration commit), not both")
    settings = command_settings(args, enabled=True, base=args.ref or "anchor")
    outcome = run_ab(
        AbRequest(
            ref=args.ref or "",
            pytest_args=tuple(args.pytest_args),
            settings=settings,
            invocation_dir=Path.cwd(),
            seed=args.seed,
            anchor=args.anchor,
        )
    )
    from perfgate.report.scrub import terminal_scrubber

    scrubber = terminal_scrubber(os.environ)  # a CI log is published: secrets masked (the table already is)
    print("\n".join([*(scrubber.text(m) for m in outcome.messages), *outcome.terminal]))
    return outcome.exit_code


def bisect(args: argparse.Namespace) -> int:
    from perfgate.ab.bisect import bisect as search
    from perfgate.ab.setup import AbRequest
    from perfgate.report.progress import elapsed_text, open_progress

    settings = command_settings(args, enabled=True, store=False)
    selection = (["-k", args.k] if args.k else []) + list(args.pytest_args)
    request = AbRequest(
        ref=args.good, pytest_args=tuple(selection), settings=settings, invocation_dir=Path.cwd(), publish=False
    )
    started = time.monotonic()
    # on stdout, where the step lines always were: each step line stays, the running step shows live
    with open_progress(sys.stdout) as shown, shown.task(f"bisect {args.good}..{args.bad}") as task:

        def step_done(line: str) -> None:
            shown.note(line)
            task.advance()

        found = search(request, args.good, args.bad, progress=step_done, measuring=task.update)
    print(f"{found.summary()[-1]} ({len(found.steps)} step(s) in {elapsed_text(time.monotonic() - started)})")
    return 0 if found.first_bad else 1
