"""The `perfgate` command: thin wrappers over the library (the pytest plugin calls the same functions).

Every command finds the project root the way pytest does and reads the same `[tool.perfgate]`; bad input
is one line on stderr naming the file and the problem, exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfgate.cli import arg_types
from perfgate.config.options import history_arg
from perfgate.errors import PerfgateError

Handler = Callable[[argparse.Namespace], int]


def main(argv: list[str] | None = None) -> int:
    args = _parse(list(sys.argv[1:] if argv is None else argv))
    try:
        handler: Handler = args.func
        return int(handler(args) or 0)
    except PerfgateError as err:
        from perfgate.report.scrub_foreign import scrub_refusal

        # a refusal runs in a CI log too and may quote a file another job wrote (`ci verdict` naming a case id
        # that holds a token, a forged `password: ...`): secrets masked
        print(scrub_refusal(str(err), os.environ), file=sys.stderr)
        return err.exit_status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `perfgate history | head`
        return 0
    except OSError as err:  # a file a command was told to use and cannot (each command names its own where it can)
        where = f"{err.filename}: " if err.filename else ""
        print(f"perfgate: {where}{err.strerror or err}", file=sys.stderr)
        return 2


def _parse(argv: list[str]) -> argparse.Namespace:
    """Everything after `--` is pytest's, wherever the command's own options and positionals are
    (argparse alone leaves `perfgate ab main --strict -- -k x` half-parsed)."""
    parser = _parser()
    extra: list[str] | None = None
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's own parser, with its usage (the top-level usage names no option)
        command: argparse.ArgumentParser = getattr(args, "command_parser", parser)
        command.error(f"unrecognized arguments: {' '.join(unknown)}{_pytest_flag_hint(unknown)}")
    if extra is not None:
        if not hasattr(args, "pytest_args"):
            parser.error("arguments after -- are pytest's; this command runs no pytest")
        args.pytest_args = [*args.pytest_args, *extra]
    return args


def _pytest_flag_hint(unknown: list[str]) -> str:
    """`--perfgate-full-table` given to a command: the command's own spelling, where it has one."""
    from perfgate.config.options import OPTIONS

    flag = unknown[0].split("=", 1)[0]
    option = next((o for o in OPTIONS if o.flag == flag), None)
    if option is None:
        return ""
    if option.cli:
        return f" ({flag} is pytest's spelling; perfgate commands take {option.cli})"
    return f" ({flag} is a pytest option only)"


def _version() -> str:
    from perfgate import __version__

    return f"perfgate {__version__}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="perfgate",
        description="performance gate for GPU kernels",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_examples(
            "perfgate calibrate --reason 'first baseline'",
            "perfgate compare --summary summary.md",
            "perfgate ab main",
        ),
    )
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(required=True, metavar="COMMAND")
    _compare_parser(sub)
    _calibrate_parser(sub)
    _ab_parsers(sub)
    _baseline_parser(sub)
    _analyze_parser(sub)
    _history_parser(sub)
    _report_parser(sub)
    _db_parser(sub)
    _import_parser(sub)
    _ci_parser(sub)
    return p


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def _command(
    sub: Any, name: str, help_text: str, examples: tuple[str, ...], description: str | None = None
) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with its examples."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help_text,
        description=description or help_text,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_examples(*examples),
    )
    parser.set_defaults(command_parser=parser)  # its own usage for its errors (_parse)
    return parser


def _settings_options(p: argparse.ArgumentParser, *attrs: str) -> None:
    """The project root plus the named settings' flags, from the one option table (config/options.py); the
    handler reads them back with cli.settings.command_settings."""
    from perfgate.config.options import add_cli_options

    p.add_argument(
        "--rootdir",
        type=Path,
        help="project root (default: found from the current directory as pytest finds its rootdir)",
    )
    add_cli_options(p, attrs)
    p.set_defaults(settings_attrs=attrs)


def _compare_parser(sub: Any) -> None:
    c = _command(
        sub,
        "compare",
        "gate a stored run against the baselines (no pytest); reads only",
        ("perfgate compare", "perfgate compare --run 12 --summary summary.md --json out.json --strict"),
    )
    from perfgate.config.options import by_attr
    from perfgate.report.outputs import output_options

    outputs = [attr for attr in output_options() if by_attr()[attr].cli]  # every output that has a command flag
    _settings_options(
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
    c.set_defaults(func=_lazy("perfgate.cli.gate", "compare"))


def _calibrate_parser(sub: Any) -> None:
    c = _command(
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
    _settings_options(c, "db_path", "baseline_dir", "baseline_file", "store")
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
    c.set_defaults(func=_lazy("perfgate.cli.calibrate", "calibrate_command"))


def _ab_parsers(sub: Any) -> None:
    a = _command(
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
    _settings_options(a, *settings, "ab_process", "strict", "ab_skip_same_code")
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
    a.set_defaults(func=_lazy("perfgate.cli.ab", "ab"))
    b = _command(
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
    _settings_options(b, "worktree_dir", "ab_rounds", "ab_process")
    b.add_argument("good", metavar="GOOD", help="a commit known to be fast")
    b.add_argument("bad", metavar="BAD", help="a later commit known to be slow")
    b.add_argument("-k", metavar="CASE", help="pytest -k expression selecting the case(s) to follow")
    b.add_argument("pytest_args", nargs="*", help="after --: what pytest runs (default: its testpaths)")
    b.set_defaults(func=_lazy("perfgate.cli.ab", "bisect"))


def _baseline_parser(sub: Any) -> None:
    b = _command(
        sub,
        "baseline",
        "show or diff baseline files",
        ("perfgate baseline show", "perfgate baseline diff old.json baselines/nvidia-h100-80gb-hbm3.json"),
    )
    bsub = b.add_subparsers(required=True, metavar="ACTION")
    show = _command(
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
    show.set_defaults(func=_lazy("perfgate.cli.gate", "baseline_show"))
    diff = _command(
        bsub,
        "diff",
        "old vs new per changed case (for a baseline-update PR)",
        ("git show main:baselines/x.json > old.json && perfgate baseline diff old.json baselines/x.json",),
    )
    diff.add_argument("old", type=Path, help="the baseline before (a missing file: every case is new)")
    diff.add_argument("new", type=Path, help="the baseline after")
    diff.add_argument("--format", choices=("md", "text"), default="md", help="Markdown (default) or plain text")
    diff.set_defaults(func=_lazy("perfgate.cli.gate", "baseline_diff"))
    re = _command(
        bsub,
        "reanchor",
        "move the centres onto the level of the last passing runs (after a common-mode shift); noise kept",
        ("perfgate baseline reanchor baselines/nvidia-h100-80gb-hbm3.json --reason 'driver 555'",),
    )
    _settings_options(re, "db_path")
    re.add_argument("path", type=Path, help="the baseline file to re-anchor")
    re.add_argument("--runs", type=int, default=5, help="passing gate runs per case to take the level from (>= 3)")
    re.add_argument("--per-case", action="store_true", help="each case by its own factor (accepts single changes)")
    re.add_argument("--reason", default="re-anchored after a common-mode shift", help="recorded in the baseline")
    re.set_defaults(func=_lazy("perfgate.cli.gate", "baseline_reanchor"))


def _analyze_parser(sub: Any) -> None:
    a = _command(
        sub,
        "analyze",
        "summarise .nsys-rep/.sqlite/.ncu-rep/ncu CSV/torch JSON files",
        (
            "perfgate analyze profile.nsys-rep",
            "perfgate analyze a.ncu-rep b.ncu-rep --output-dir report/",
            "perfgate analyze trace.json --format json > trace.analysis.json",
        ),
    )
    a.add_argument("files", type=Path, nargs="+", help="profiler outputs (the kind is sniffed from the content)")
    a.add_argument("--format", choices=("json", "md"), default="md", help="what to print on stdout")
    a.add_argument("--output-dir", type=Path, help="write report.md, analysis.json and charts here")
    a.add_argument("--no-charts", action="store_true", help="with --output-dir: skip the charts")
    a.set_defaults(func=_lazy("perfgate.cli.analyze", "analyze"))


def _history_parser(sub: Any) -> None:
    h = _command(
        sub,
        "history",
        "list stored runs, a case's trend, or the step changes in every case's history (reads only)",
        (
            "perfgate history --last 10",
            "perfgate history --case '*softmax*' --format csv",
            "perfgate history --kind ab --last 10",
            "perfgate history --changes --branch main",
            "perfgate history --changes --case '*softmax*' --accept 'new driver: +2% expected'",
        ),
    )
    _settings_options(h, "db_path")
    h.add_argument(
        "--case",
        help="case ids to trend instead of listing runs: '*' and '?' are wildcards, "
        "everything else (brackets too) matches itself, e.g. '*enum[BaseConverter]*'",
    )
    h.add_argument(
        "--case-regex", help="or a Python regular expression searched in the case ids, e.g. 'softmax\\[(1024|2048)\\]'"
    )
    h.add_argument("--last", type=arg_types.COUNT, metavar="N", default=20, help="the last N runs (default 20)")
    h.add_argument("--format", choices=("table", "csv", "json"), default="table", help="output format")
    h.add_argument(
        "--kind",
        choices=("gate", "calibration", "import", "ab", "anchor", "all"),
        default="",
        help="only runs of this kind: ab lists both sides of A/B comparisons, which are otherwise left out, "
        "anchor those of anchor runs (perfgate ab --anchor) (default: every kind but ab)",
    )
    h.add_argument(
        "--changes",
        action="store_true",
        help="step changes in each case's time per device model, with commit ranges (whole history)",
    )
    h.add_argument("--branch", help="with --changes: only runs on this git branch (e.g. main)")
    h.add_argument(
        "--min-change",
        type=float,
        default=1.0,
        metavar="PCT",
        help="with --changes: the smallest step reported, in percent (default 1)",
    )
    h.add_argument(
        "--accept",
        metavar="REASON",
        help="with --changes: accept the steps found (each case's noise window starts after its step; "
        "the runs are pinned) and say why",
    )
    h.set_defaults(func=_lazy("perfgate.cli.data", "history"))


def _report_parser(sub: Any) -> None:
    r = _command(
        sub,
        "report",
        "write the history as a static HTML dashboard (reads only)",
        ("perfgate report --html site/", "perfgate report --html site/ --db runner.db --summaries 20"),
    )
    _settings_options(r, "db_path", "baseline_dir", "repo_url")
    r.add_argument(
        "--html",
        type=Path,
        required=True,
        metavar="DIR",
        help="the site's directory (new, empty, or a site written before; it is replaced whole)",
    )
    r.add_argument(
        "--summaries",
        type=int,
        default=100,
        metavar="N",
        help="run pages with the gate summary: the latest N runs (default 100)",
    )
    r.set_defaults(func=_lazy("perfgate.cli.report", "report"))


def _db_parser(sub: Any) -> None:
    d = _command(
        sub,
        "db",
        "history databases: merge, export, prune, pin, metadata",
        ("perfgate db merge all.db runner1.db runner2.db", "perfgate db prune --keep-runs 1000"),
    )
    dsub = d.add_subparsers(required=True, metavar="ACTION")
    merge = _command(
        dsub,
        "merge",
        "merge histories from several runners into OUT (idempotent)",
        ("perfgate db merge all.db runner1.db runner2.db",),
    )
    merge.add_argument(
        "out", type=history_arg, help="the history to merge into: a file (created when missing) or a postgresql:// URL"
    )
    merge.add_argument("inputs", type=history_arg, nargs="+", help="histories to read (read only): files or URLs")
    merge.set_defaults(func=_lazy("perfgate.cli.data", "db_merge"))
    export = _command(
        dsub,
        "export",
        "copy only the named runs into OUT (what one CI job uploads)",
        ("perfgate db export job.db --results results/perfgate.json",),
    )
    _settings_options(export, "db_path", "publish_host")
    export.add_argument("out", type=history_arg, help="the history to write (created, or merged into): a file or a URL")
    export.add_argument("--run-uid", action="append", help="a run's identity (repeatable)")
    export.add_argument("--results", type=Path, help="the run a results file (perfgate.json) describes")
    export.set_defaults(func=_lazy("perfgate.cli.data", "db_export"))
    prune = _command(
        dsub,
        "prune",
        "remove old runs (never pinned ones or those a baseline refers to), then compact the file",
        ("perfgate db prune --keep-runs 1000 --older-than 90",),
    )
    _settings_options(prune, "db_path", "baseline_dir")
    prune.add_argument("--keep-runs", type=arg_types.COUNT, metavar="N", help="always keep the newest N runs")
    prune.add_argument(
        "--older-than", type=arg_types.AGE_DAYS, metavar="DAYS", help="only remove runs started more than DAYS days ago"
    )
    prune.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    prune.add_argument("--no-vacuum", action="store_true", help="skip the compaction (VACUUM)")
    prune.set_defaults(func=_lazy("perfgate.cli.data", "db_prune"))
    pin = _command(
        dsub,
        "pin",
        "keep runs whatever prune is asked",
        ('perfgate db pin 812 --reason "change point: softmax +12%%"',),
    )
    _settings_options(pin, "db_path")
    pin.add_argument("runs", type=arg_types.RUN_ID, metavar="RUN", nargs="+", help="run ids")
    pin.add_argument("--reason", required=True, help="why the run must stay")
    pin.set_defaults(func=_lazy("perfgate.cli.data", "db_pin"))
    meta = _command(
        dsub,
        "metadata",
        "print Datasette metadata describing the history's tables",
        ("perfgate db metadata > metadata.json && datasette .perfgate/history.db --metadata metadata.json",),
    )
    meta.add_argument(
        "--db", type=history_arg, help="the history it is for (its file name is Datasette's database name)"
    )
    meta.set_defaults(func=_lazy("perfgate.cli.data", "db_metadata"))


def _import_parser(sub: Any) -> None:
    i = _command(
        sub,
        "import-benchmark",
        "store pytest-benchmark JSON files (--benchmark-json, saved runs) as runs; seed this machine's baseline",
        (
            "pytest --benchmark-json=bench.json && perfgate import-benchmark bench.json",
            "perfgate import-benchmark --seed-baseline .benchmarks/Linux-CPython-3.11-64bit/0003_main.json",
        ),
    )
    _settings_options(i, "db_path", "baseline_dir")
    i.add_argument(
        "--seed-baseline",
        action="store_true",
        help="also add the cases this machine's host baseline lacks, marked imported (the files must come "
        "from this machine's CPU)",
    )
    i.add_argument("files", type=Path, nargs="+", help="pytest-benchmark JSON files")
    i.set_defaults(func=_lazy("perfgate.cli.data", "import_benchmark"))


def _ci_parser(sub: Any) -> None:
    c = _command(
        sub,
        "ci",
        "GitHub Actions helpers",
        (
            "perfgate ci init --runner-label gpu-h100 --action-ref owner/perfgate@<40-hex sha>",
            "perfgate ci annotate perfgate.json",
        ),
    )
    csub = c.add_subparsers(required=True, metavar="ACTION")
    ann = _command(
        csub,
        "annotate",
        "print ::error/::warning workflow commands for a results JSON",
        ("perfgate ci annotate results/perfgate.json",),
    )
    ann.add_argument("results", type=Path, help="perfgate.json written by --perfgate-json")
    ann.set_defaults(func=_lazy("perfgate.cli.ci", "annotate"))
    com = _command(
        csub,
        "comment",
        "create or update the one perfgate comment on a pull request",
        (
            "GITHUB_TOKEN=... perfgate ci comment --results results/*/perfgate.json --repo owner/name --pr 12",
            "perfgate ci comment h100.md a100.md --repo owner/name --pr 12 --marker perfgate-matrix",
        ),
    )
    com.add_argument(
        "summary",
        type=Path,
        nargs="*",
        help="Markdown summaries to post as they are (trusted input only); several become one comment",
    )
    com.add_argument(
        "--results",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="render the comment from these results files (perfgate.json), every string from them "
        "shown as code: what a job that ran pull-request code wrote",
    )
    com.add_argument("--commit", default="", help="the commit that was gated (40 hex), named in the comment")
    com.add_argument("--repo", required=True, help="owner/name")
    com.add_argument("--pr", type=int, required=True, help="pull request number")
    com.add_argument("--token-env", default="GITHUB_TOKEN", help="environment variable holding the token")
    com.add_argument("--api-url", default="https://api.github.com", help="GitHub REST API base URL")
    com.add_argument("--marker", default="perfgate", help="one sticky comment per marker (matrix jobs: one each)")
    com.add_argument(
        "--author",
        help="the login the token comments as (default: asked of the API; "
        "github-actions[bot] for GitHub Actions' token): only its comments are edited",
    )
    com.set_defaults(func=_lazy("perfgate.cli.ci", "comment"))
    ver = _command(
        csub,
        "verdict",
        "exit 1 when a results file says the gate failed, 2 when it is missing or "
        "unreadable, 4 when its verdicts contradict its own numbers (the action checks the gate's own "
        "verdict, not only pytest's status)",
        ("perfgate ci verdict results/perfgate.json",),
    )
    ver.add_argument("results", type=Path, nargs="+", help="perfgate.json files written by --perfgate-json")
    ver.add_argument(
        "--not-before",
        metavar="ISO_TIME",
        help="refuse (exit 2) a results file whose run started before this time: a stale file",
    )
    ver.add_argument(
        "--require-strict", action="store_true", help="refuse (exit 2) a results file written without --perfgate-strict"
    )
    ver.set_defaults(func=_lazy("perfgate.cli.ci", "verdict"))
    _ci_boundary_parsers(csub)
    init = _command(
        csub,
        "init",
        "write the workflows for the perfgate actions: the gate, its trusted report, baseline updates",
        (
            "perfgate ci init --runner-label gpu-h100 --action-ref owner/perfgate@<40-hex commit sha>",
            "perfgate ci init --runner-label ubuntu-latest --action-ref owner/perfgate@<40-hex commit sha>",
        ),
    )
    init.add_argument(
        "--output",
        type=Path,
        default=Path(".github/workflows/perfgate.yml"),
        help="the gate's workflow; -report.yml (hosted runners) and -baseline.yml are written beside it "
        "(default .github/workflows/perfgate.yml)",
    )
    init.add_argument(
        "--action-ref",
        required=True,
        help="OWNER/REPO@COMMIT_SHA of the perfgate action: pinned by a full 40-hex commit, never by "
        "a movable tag (its report action and the perfgate the workflows install come from the same commit)",
    )
    init.add_argument(
        "--runner-label",
        default="gpu",
        help="the runner's label: a self-hosted GPU runner's (gpu-h100), or a GitHub-hosted image (ubuntu-latest)",
    )
    init.add_argument(
        "--runner",
        choices=("auto", "self-hosted", "hosted"),
        default="auto",
        help="the kind of runner (auto: hosted for ubuntu-*, windows-*, macos-* labels)",
    )
    init.add_argument("--pytest-args", default="tests/perf", help="what the gate runs (default tests/perf)")
    init.add_argument("--python-version", default="3.11", help="the Python actions/setup-python installs")
    init.add_argument("--default-branch", default="", help="default: the repository's (origin/HEAD, else the current)")
    init.add_argument(
        "--db-secret",
        default="",
        metavar="NAME",
        help="the repository secret holding the fleet's history URL (postgresql://...): the gate stores there "
        "(default: a SQLite history on each runner)",
    )
    init.add_argument("--force", action="store_true", help="overwrite existing files")
    init.set_defaults(func=_lazy("perfgate.cli.ci", "init"))


def _ci_boundary_parsers(csub: Any) -> None:
    """The commands either side of the trust boundary: `report` and `unlabel` (the trusted job), `confine`
    (the measuring job's tests)."""
    rep = _command(
        csub,
        "report",
        "the trusted job's step: approval labels off, the results checked (ci verdict), the commit status set "
        "on the gated commit, the comment edited; exit status ci verdict's",
        ("GITHUB_TOKEN=... perfgate ci report --results results/perfgate.json --repo o/r --sha <40 hex> --pr 12",),
    )
    rep.add_argument("--results", type=Path, nargs="+", required=True, metavar="JSON", help="the perfgate.json files")
    rep.add_argument("--repo", required=True, help="owner/name")
    rep.add_argument("--sha", required=True, help="the gated commit (40 hex): the status is set on it")
    rep.add_argument("--pr", type=int, help="the pull request to comment on")
    rep.add_argument(
        "--pr-head", default="", help="OWNER:BRANCH: the open pull request from there at --sha (a fork's run)"
    )
    rep.add_argument("--context", default="perfgate", help="the commit status's name (branch protection requires it)")
    rep.add_argument("--target-url", default="", help="where the status links (the workflow run)")
    rep.add_argument("--remove-labels", default="", help="comma-separated approval labels to take off first")
    rep.add_argument("--no-comment", dest="comment", action="store_false", help="set the status only")
    rep.add_argument("--require-strict", action="store_true", help="a results file without strict mode is an error")
    rep.add_argument("--marker", default="perfgate", help="one sticky comment per marker")
    rep.add_argument("--author", help="the login the token comments as (default: asked of the API)")
    rep.add_argument("--token-env", default="GITHUB_TOKEN", help="environment variable holding the token")
    rep.add_argument("--api-url", default="https://api.github.com", help="GitHub REST API base URL")
    rep.set_defaults(func=_lazy("perfgate.cli.ci", "report"))
    unl = _command(
        csub,
        "unlabel",
        "take approval labels off a pull request (on every push: an approval is for one commit)",
        ("GITHUB_TOKEN=... perfgate ci unlabel --repo o/r --pr 12 --labels perfgate,perfgate-baseline",),
    )
    unl.add_argument("--repo", required=True, help="owner/name")
    unl.add_argument("--pr", type=int, required=True, help="pull request number")
    unl.add_argument("--labels", required=True, help="comma-separated label names")
    unl.add_argument("--token-env", default="GITHUB_TOKEN", help="environment variable holding the token")
    unl.add_argument("--api-url", default="https://api.github.com", help="GitHub REST API base URL")
    unl.set_defaults(func=_lazy("perfgate.cli.ci", "unlabel"))
    con = _command(
        csub,
        "confine",
        "run a command (the gate's pytest) away from the GitHub runner's command files: what it writes "
        "there is put back and fails the command (exit 3), processes it leaves behind are killed",
        ("perfgate ci confine -- python -m pytest --perfgate tests/perf",),
    )
    con.add_argument("pytest_args", nargs="*", metavar="CMD", help="the command, after --")
    con.set_defaults(func=_lazy("perfgate.cli.ci", "confine"))


def _lazy(module: str, name: str) -> Handler:
    """Import a command's module only when it runs: `perfgate --version` stays instant."""

    def run(args: argparse.Namespace) -> int:
        import importlib

        handler: Handler = getattr(importlib.import_module(module), name)
        return handler(args)

    return run


if __name__ == "__main__":
    raise SystemExit(main())
