"""A/B mode's commands: `ab` (head against a base commit side by side) and `bisect` (the first slower
commit); handlers in cli/ab.py."""

from __future__ import annotations

from typing import Any

from perfgate.cli import arg_types
from perfgate.cli.parsers import command, lazy, settings_options


def add_ab(sub: Any) -> None:
    a = command(
        sub,
        "ab",
        "measure the head against a base commit side by side on one GPU (A/B mode)",
        (
            "perfgate ab main",
            "perfgate ab origin/main --strict --summary ab.md -- kernels/tests/test_perf.py",
            "perfgate ab --anchor --summary anchor.md",
        ),
        description="Check out REF in a cached worktree, run the selected perf tests in a worker per tree "
        "and alternate base and head in short rounds on the same GPU; each case's verdict is "
        "on its head/base ratio (docs/ab.md). Same as `pytest --perfgate --perfgate-base REF`.",
    )
    from perfgate.config.options import by_attr
    from perfgate.report.outputs import output_options

    outputs = [attr for attr in output_options() if by_attr()[attr].cli]  # every output, as in baseline mode
    settings = ("db_path", "store", "baseline_dir", "baseline_file", *outputs, "worktree_dir", "ab_rounds")
    settings_options(a, *settings, "ab_process", "strict", "ab_skip_same_code")
    a.add_argument("ref", metavar="REF", nargs="?", help="the base: a branch, tag or commit git knows")
    a.add_argument(
        "--anchor",
        action="store_true",
        help="the base is the commit the baseline was calibrated at: each ratio is the case's cumulative change "
        "since, machine and driver drift cancelled (docs/anchor.md); no REF",
    )
    a.add_argument("pytest_args", nargs="*", help="after --: what pytest runs (default: its testpaths)")
    a.add_argument(
        "--seed",
        type=arg_types.integer(0, 2**32 - 1),
        help="the rounds' order and which worker starts first (default: a fresh one, shown in the settings line)",
    )
    a.set_defaults(func=lazy("perfgate.cli.ab", "ab"))


def add_bisect(sub: Any) -> None:
    b = command(
        sub,
        "bisect",
        "find the first commit whose cases are slower than GOOD's (A/B at each step)",
        (
            "perfgate bisect v1.2 main -k softmax",
            "perfgate bisect HEAD~16 HEAD -- kernels/tests/test_perf.py::test_matmul",
        ),
        description="Binary search over the first-parent commits GOOD..BAD: each step measures a commit "
        "against GOOD side by side (as perfgate ab does) and calls it bad when a selected case "
        "regressed. Commits that fail to build or test are skipped, like git bisect skip.",
    )
    settings_options(b, "worktree_dir", "ab_rounds", "ab_process")
    b.add_argument("good", metavar="GOOD", help="a commit known to be fast")
    b.add_argument("bad", metavar="BAD", help="a later commit known to be slow")
    b.add_argument("-k", metavar="CASE", help="pytest -k expression selecting the case(s) to follow")
    b.add_argument("pytest_args", nargs="*", help="after --: what pytest runs (default: its testpaths)")
    b.set_defaults(func=lazy("perfgate.cli.ab", "bisect"))
