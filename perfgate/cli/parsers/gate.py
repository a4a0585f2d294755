"""The gate's commands: `compare` (a stored run against the baselines), `calibrate` (a baseline from N
fresh processes) and `baseline` (show, diff, re-anchor the files); handlers in cli/gate.py, cli/calibrate.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfgate.cli import arg_types
from perfgate.cli.parsers import command, lazy, settings_options


def add_compare(sub: Any) -> None:
    c = command(
        sub,
        "compare",
        "gate a stored run against the baselines (no pytest); reads only",
        ("perfgate compare", "perfgate compare --run 12 --summary summary.md --json out.json --strict"),
    )
    from perfgate.config.options import by_attr
    from perfgate.report.outputs import output_options

    outputs = [attr for attr in output_options() if by_attr()[attr].cli]  # every output that has a command flag
    settings_options(
        c,
        "db_path",
        "baseline_dir",
        "baseline_file",
        *outputs,
        "json_samples",
        "full_table",
        "allow_env_mismatch",
        "strict",
    )
    c.add_argument("--run", type=arg_types.RUN_ID, metavar="ID", help="run id (default: the latest)")
    c.set_defaults(func=lazy("perfgate.cli.gate", "compare"))


def add_calibrate(sub: Any) -> None:
    c = command(
        sub,
        "calibrate",
        "measure in N fresh processes and write a calibrated baseline",
        (
            "perfgate calibrate --reason 'first baseline'",
            "perfgate calibrate --runs 12 --reason 'new driver' --replace -- kernels/tests/test_perf.py",
        ),
        description="Run `pytest --perfgate PYTEST_ARGS` in N fresh processes and write the baseline for "
        "this device from all of them: per case the median of the process medians, the "
        "between-process noise and the change it can detect.",
    )
    settings_options(c, "db_path", "baseline_dir", "baseline_file", "store")
    c.add_argument(
        "--runs",
        type=int,
        help="fresh processes, at least 3 (default: as many as hold the false-alarm budget for the suite's size "
        "whatever the noise's shape, at least 10: 12 at 1,000 cases)",
    )
    c.add_argument("--reason", required=True, help="why the baseline changes (recorded in its update log)")
    c.add_argument(
        "--replace",
        action="store_true",
        help="drop the baseline's cases this calibration did not measure (default: keep them)",
    )
    c.add_argument("pytest_args", nargs="*", help="after --: what pytest runs (default: its testpaths)")
    c.set_defaults(func=lazy("perfgate.cli.calibrate", "calibrate_command"))


def add_baseline(sub: Any) -> None:
    b = command(
        sub,
        "baseline",
        "show or diff baseline files",
        ("perfgate baseline show", "perfgate baseline diff old.json baselines/nvidia-h100-80gb-hbm3.json"),
    )
    bsub = b.add_subparsers(required=True, metavar="ACTION")
    show = command(
        bsub,
        "show",
        "list the cases of a baseline file (or of every file in a directory)",
        ("perfgate baseline show", "perfgate baseline show baselines/nvidia-h100-80gb-hbm3.json"),
    )
    show.add_argument(
        "path",
        type=Path,
        nargs="?",
        default=Path("baselines"),
        help="a baseline file or a directory of them (default baselines/)",
    )
    show.set_defaults(func=lazy("perfgate.cli.gate", "baseline_show"))
    diff = command(
        bsub,
        "diff",
        "old vs new per changed case (for a baseline-update PR)",
        ("git show main:baselines/x.json > old.json && perfgate baseline diff old.json baselines/x.json",),
    )
    diff.add_argument("old", type=Path, help="the baseline before (a missing file: every case is new)")
    diff.add_argument("new", type=Path, help="the baseline after")
    diff.add_argument("--format", choices=("md", "text"), default="md", help="Markdown (default) or plain text")
    diff.set_defaults(func=lazy("perfgate.cli.gate", "baseline_diff"))
    re = command(
        bsub,
        "reanchor",
        "move the centres onto the level of the last passing runs (after a common-mode shift); noise kept",
        ("perfgate baseline reanchor baselines/nvidia-h100-80gb-hbm3.json --reason 'driver 555'",),
    )
    settings_options(re, "db_path")
    re.add_argument("path", type=Path, help="the baseline file to re-anchor")
    re.add_argument(
        "--runs",
        type=arg_types.integer(3),  # baseline/reanchor.py MIN_RUNS (tests/test_reanchor.py: they agree)
        default=5,
        help="passing gate runs per case to take the level from (>= 3: one odd process must not move it)",
    )
    re.add_argument("--per-case", action="store_true", help="each case by its own factor (accepts single changes)")
    re.add_argument(
        "--force",
        action="store_true",
        help="move the centres even where the recent runs show no common shift (they then move by noise)",
    )
    re.add_argument("--reason", default="re-anchored after a common-mode shift", help="recorded in the baseline")
    re.set_defaults(func=lazy("perfgate.cli.gate", "baseline_reanchor"))
