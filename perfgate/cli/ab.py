"""`perfgate ab REF [-- PYTEST_ARGS]` and `perfgate bisect GOOD BAD [-k CASE] [-- PYTEST_ARGS]`: A/B mode without
a pytest parent (the work is perfgate.ab.run and perfgate.ab.bisect, the same as `pytest --perfgate-base`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from perfgate.cli.settings import command_settings


def ab(args: argparse.Namespace) -> int:
    from perfgate.ab.run import AbRequest, run_ab

    settings = command_settings(args, enabled=True, base=args.ref)
    outcome = run_ab(
        AbRequest(
            ref=args.ref,
            pytest_args=tuple(args.pytest_args),
            settings=settings,
            invocation_dir=Path.cwd(),
            seed=args.seed,
        )
    )
    print("\n".join(outcome.messages))
    return outcome.exit_code


def bisect(args: argparse.Namespace) -> int:
    from perfgate.ab.bisect import bisect as search
    from perfgate.ab.run import AbRequest

    settings = command_settings(args, enabled=True, store=False)
    selection = (["-k", args.k] if args.k else []) + list(args.pytest_args)
    request = AbRequest(
        ref=args.good, pytest_args=tuple(selection), settings=settings, invocation_dir=Path.cwd(), publish=False
    )
    found = search(request, args.good, args.bad, progress=lambda line: print(line, flush=True))
    print(found.summary()[-1])
    return 0 if found.first_bad else 1
