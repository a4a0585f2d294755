"""The `perfgate` command: thin wrappers over the library (the pytest plugin calls the same functions).

Every command finds the project root the way pytest does and reads the same `[tool.perfgate]`; bad input
is one line on stderr naming the file and the problem, exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfgate.errors import PerfgateError

Handler = Callable[[argparse.Namespace], int]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        handler: Handler = args.func
        return int(handler(args) or 0)
    except PerfgateError as err:
        print(str(err), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `perfgate history | head`
        return 0


def _version() -> str:
    from perfgate import __version__

    return f"perfgate {__version__}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="perfgate", description="performance gate for GPU kernels")
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(required=True, metavar="COMMAND")
    _compare_parser(sub)
    _calibrate_parser(sub)
    _baseline_parser(sub)
    _analyze_parser(sub)
    _history_parser(sub)
    _db_parser(sub)
    _import_parser(sub)
    _ci_parser(sub)
    return p


def _root_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rootdir", type=Path, help="project root (default: found from the current directory as "
                                                "pytest finds its rootdir)")


def _compare_parser(sub: Any) -> None:
    c = sub.add_parser("compare", help="gate a stored run against the baselines (no pytest); reads only")
    _root_options(c)
    c.add_argument("--db", type=Path,
                   help="history (default from [tool.perfgate] db, $PERFGATE_DB or .perfgate/history.db)")
    c.add_argument("--run", type=int, help="run id (default: the latest)")
    c.add_argument("--baseline-dir", type=Path)
    c.add_argument("--baseline-file", type=Path)
    c.add_argument("--summary", type=Path, help="write the Markdown summary here")
    c.add_argument("--json", type=Path, help="write the JSON results here")
    c.add_argument("--report-dir", type=Path, help="write the charts (PNG) here")
    c.add_argument("--allow-env-mismatch", action="store_true", default=None)
    c.add_argument("--strict", action="store_true", default=None, help="fail closed (see --perfgate-strict)")
    c.set_defaults(func=_lazy("perfgate.cli_gate", "compare"))


def _calibrate_parser(sub: Any) -> None:
    c = sub.add_parser("calibrate", help="measure in N fresh processes and write a calibrated baseline",
                       description="Run `pytest --perfgate PYTEST_ARGS` in N fresh processes and write the baseline "
                                   "for this device from all of them: per case the median of the process medians, "
                                   "the between-process noise and the change it can detect.")
    _root_options(c)
    c.add_argument("--runs", type=int, default=10, help="fresh processes (default 10; at least 3)")
    c.add_argument("--reason", required=True, help="why the baseline changes (recorded in its update log)")
    c.add_argument("--db", type=Path)
    c.add_argument("--baseline-dir", type=Path)
    c.add_argument("--baseline-file", type=Path, help="write this file instead of <baseline-dir>/<device>.json")
    c.add_argument("--no-store", action="store_true", help="do not keep the calibration runs in the history")
    c.add_argument("--replace", action="store_true",
                   help="drop the baseline's cases this calibration did not measure (default: keep them)")
    c.add_argument("pytest_args", nargs="*", help="after --: what pytest runs (default: its testpaths)")
    c.set_defaults(func=_lazy("perfgate.calibrate", "calibrate_command"))


def _baseline_parser(sub: Any) -> None:
    b = sub.add_parser("baseline", help="baseline files")
    bsub = b.add_subparsers(required=True, metavar="ACTION")
    show = bsub.add_parser("show", help="list the cases of a baseline file (or of every file in a directory)")
    show.add_argument("path", type=Path, nargs="?", default=Path("baselines"))
    show.set_defaults(func=_lazy("perfgate.cli_gate", "baseline_show"))
    diff = bsub.add_parser("diff", help="old vs new per changed case (for a baseline-update PR)")
    diff.add_argument("old", type=Path)
    diff.add_argument("new", type=Path)
    diff.add_argument("--format", choices=("md", "text"), default="md")
    diff.set_defaults(func=_lazy("perfgate.cli_gate", "baseline_diff"))


def _analyze_parser(sub: Any) -> None:
    a = sub.add_parser("analyze", help="summarise .nsys-rep/.sqlite/.ncu-rep/ncu CSV/torch JSON files")
    a.add_argument("files", type=Path, nargs="+")
    a.add_argument("--format", choices=("json", "md"), default="md", help="what to print on stdout")
    a.add_argument("--output-dir", type=Path, help="write report.md, analysis.json and charts here")
    a.add_argument("--no-charts", action="store_true")
    a.set_defaults(func=_lazy("perfgate.cli_analyze", "analyze"))


def _history_parser(sub: Any) -> None:
    h = sub.add_parser("history", help="list stored runs, or a case's trend (reads only)")
    _root_options(h)
    h.add_argument("--db", type=Path)
    h.add_argument("--case", help="shell pattern on case ids: show their trend instead of the runs")
    h.add_argument("--last", type=int, default=20, help="the last N runs (default 20)")
    h.add_argument("--format", choices=("table", "csv", "json"), default="table")
    h.set_defaults(func=_lazy("perfgate.cli_data", "history"))


def _db_parser(sub: Any) -> None:
    d = sub.add_parser("db", help="history databases")
    dsub = d.add_subparsers(required=True, metavar="ACTION")
    merge = dsub.add_parser("merge", help="merge histories from several runners into OUT (idempotent)")
    merge.add_argument("out", type=Path)
    merge.add_argument("inputs", type=Path, nargs="+")
    merge.set_defaults(func=_lazy("perfgate.cli_data", "db_merge"))


def _import_parser(sub: Any) -> None:
    i = sub.add_parser("import-benchmark", help="store pytest-benchmark JSON files (--benchmark-json) as runs")
    _root_options(i)
    i.add_argument("files", type=Path, nargs="+")
    i.add_argument("--db", type=Path)
    i.set_defaults(func=_lazy("perfgate.cli_data", "import_benchmark"))


def _ci_parser(sub: Any) -> None:
    c = sub.add_parser("ci", help="GitHub Actions helpers")
    csub = c.add_subparsers(required=True, metavar="ACTION")
    ann = csub.add_parser("annotate", help="print ::error/::warning workflow commands for a results JSON")
    ann.add_argument("results", type=Path)
    ann.set_defaults(func=_lazy("perfgate.cli_ci", "annotate"))
    com = csub.add_parser("comment", help="create or update the one perfgate comment on a pull request")
    com.add_argument("summary", type=Path, nargs="+",
                     help="the Markdown summary to post; several (matrix jobs) become one comment")
    com.add_argument("--repo", required=True, help="owner/name")
    com.add_argument("--pr", type=int, required=True)
    com.add_argument("--token-env", default="GITHUB_TOKEN", help="environment variable holding the token")
    com.add_argument("--api-url", default="https://api.github.com")
    com.add_argument("--marker", default="perfgate", help="one sticky comment per marker (matrix jobs: one each)")
    com.set_defaults(func=_lazy("perfgate.cli_ci", "comment"))
    init = csub.add_parser("init", help="write a starter workflow that runs the perfgate composite action")
    init.add_argument("--output", type=Path, default=Path(".github/workflows/perfgate.yml"))
    init.add_argument("--action-ref", required=True,
                      help="OWNER/REPO@COMMIT_SHA of the perfgate action (a full commit: the report job installs "
                           "perfgate from the same commit)")
    init.add_argument("--runner-label", default="gpu")
    init.add_argument("--pytest-args", default="tests/perf", help="what the gate runs (default tests/perf)")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(func=_lazy("perfgate.cli_ci", "init"))


def _lazy(module: str, name: str) -> Handler:
    """Import a command's module only when it runs: `perfgate --version` stays instant."""
    def run(args: argparse.Namespace) -> int:
        import importlib

        handler: Handler = getattr(importlib.import_module(module), name)
        return handler(args)

    return run


if __name__ == "__main__":
    raise SystemExit(main())
