"""The options of what a run does (the gate, strict mode, a baseline update and what may change it) and where
things are (the history, the baselines): rows of the one option table (options.py).
"""

from __future__ import annotations

from perfgate.config import validate as v
from perfgate.config.option import Arg, Option

RUN: tuple[Option, ...] = (
    # --- what a run does ------------------------------------------------------------------------------
    Option(
        "enabled", "measure perf cases, store the run, gate on baselines", v.boolean, flag="--perfgate", arg=Arg.FLAG
    ),
    Option(
        "strict",
        "fail closed: no case measured, a baseline case not measured (skipped, deselected, renamed), "
        "not comparable, a profiler failure, the host clock against a CUDA baseline, a process beyond ceiling_pct, "
        "a baseline changed since the base ref each fail the gate",
        v.boolean,
        key="strict",
        flag="--perfgate-strict",
        cli="--strict",
        arg=Arg.FLAG,
    ),
    Option(
        "update_baseline",
        "write the baseline from this run (uncalibrated; prefer perfgate calibrate); only on pytest's own command line",
        v.boolean,
        flag="--perfgate-update-baseline",
        arg=Arg.FLAG,
        command_line_only=True,
    ),
    Option(
        "reason",
        "why the baseline changes (required with --perfgate-update-baseline)",
        v.text,
        flag="--perfgate-reason",
        metavar="TEXT",
    ),
    Option(
        "store",
        "write nothing: no history, no initial baseline (outputs named by an option still are)",
        v.boolean,
        flag="--perfgate-no-store",
        cli="--no-store",
        arg=Arg.NO_FLAG,
    ),
    Option(
        "baseline_ref",
        "the git ref a pull request is gated against (default: origin/$GITHUB_BASE_REF): a "
        "baseline or [tool.perfgate] that differs from it fails strict mode unless the change is stated; only on "
        "pytest's own command line",
        v.text,
        flag="--perfgate-baseline-ref",
        metavar="REF",
        command_line_only=True,
    ),
    Option(
        "accept_baseline_change",
        "the pull request states that its baseline or [tool.perfgate] change is "
        "intended (the workflow passes it for a labelled PR); only on pytest's own command line",
        v.boolean,
        flag="--perfgate-accept-baseline-change",
        arg=Arg.FLAG,
        command_line_only=True,
    ),
    Option(
        "allow_missing",
        'baseline cases a strict gate may miss, each with its reason: [{pattern = "shell '
        'pattern on case ids", reason = "why"}]',
        v.allowed_missing,
        key="allow_missing",
    ),
    Option(
        "allow_env_mismatch",
        "compare even when the baseline was measured on another device model",
        v.boolean,
        flag="--perfgate-allow-env-mismatch",
        cli="--allow-env-mismatch",
        arg=Arg.FLAG,
    ),
    # --- where things are -------------------------------------------------------------------------------
    Option(
        "db_path",
        "history: a SQLite file (default .perfgate/history.db) or a postgresql:// URL (a fleet's server; "
        "give it in $PERFGATE_DB from a secret, its password is never shown)",
        v.history,
        key="db",
        flag="--perfgate-db",
        cli="--db",
        arg=Arg.HISTORY,
        metavar="PATH_OR_URL",
    ),
    Option(
        "baseline_dir",
        "directory of committed baselines, one file per GPU model (default baselines/)",
        v.path,
        key="baseline_dir",
        flag="--perfgate-baseline-dir",
        cli="--baseline-dir",
        arg=Arg.PATH,
        metavar="DIR",
    ),
    Option(
        "baseline_file",
        "use this baseline file instead (it must exist)",
        v.path,
        flag="--perfgate-baseline-file",
        cli="--baseline-file",
        arg=Arg.PATH,
        metavar="PATH",
    ),
)
