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
    p = argparse.ArgumentParser(prog="perfgate", description="performance gate for GPU kernels",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=_examples("perfgate calibrate --runs 6 --reason 'first baseline'",
                                                 "perfgate compare --summary summary.md"))
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


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def _command(sub: Any, name: str, help_text: str, examples: tuple[str, ...], description: str | None = None
             ) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with its examples."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=description or help_text,
                                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                                     epilog=_examples(*examples))
    return parser


def _settings_options(p: argparse.ArgumentParser, *attrs: str) -> None:
    """The project root plus the named settings' flags, from the one option table (config/options.py); the
    handler reads them back with cli.settings.command_settings."""
    from perfgate.config.options import add_cli_options

    p.add_argument("--rootdir", type=Path, help="project root (default: found from the current directory as "
                                                "pytest finds its rootdir)")
    add_cli_options(p, attrs)
    p.set_defaults(settings_attrs=attrs)


def _compare_parser(sub: Any) -> None:
    c = _command(sub, "compare", "gate a stored run against the baselines (no pytest); reads only",
                 ("perfgate compare", "perfgate compare --run 12 --summary summary.md --json out.json --strict"))
    _settings_options(c, "db_path", "baseline_dir", "baseline_file", "summary_path", "json_path", "report_dir",
                      "allow_env_mismatch", "strict")
    c.add_argument("--run", type=int, help="run id (default: the latest)")
    c.set_defaults(func=_lazy("perfgate.cli.gate", "compare"))


def _calibrate_parser(sub: Any) -> None:
    c = _command(sub, "calibrate", "measure in N fresh processes and write a calibrated baseline",
                 ("perfgate calibrate --runs 6 --reason 'first baseline'",
                  "perfgate calibrate --runs 10 --reason 'new driver' --replace -- kernels/tests/test_perf.py"),
                 description="Run `pytest --perfgate PYTEST_ARGS` in N fresh processes and write the baseline for "
                             "this device from all of them: per case the median of the process medians, the "
                             "between-process noise and the change it can detect.")
    _settings_options(c, "db_path", "baseline_dir", "baseline_file", "store")
    c.add_argument("--runs", type=int, default=10, help="fresh processes (default 10; at least 3)")
    c.add_argument("--reason", required=True, help="why the baseline changes (recorded in its update log)")
    c.add_argument("--replace", action="store_true",
                   help="drop the baseline's cases this calibration did not measure (default: keep them)")
    c.add_argument("pytest_args", nargs="*", help="after --: what pytest runs (default: its testpaths)")
    c.set_defaults(func=_lazy("perfgate.cli.calibrate", "calibrate_command"))


def _baseline_parser(sub: Any) -> None:
    b = _command(sub, "baseline", "show or diff baseline files",
                 ("perfgate baseline show", "perfgate baseline diff old.json baselines/nvidia-h100-80gb-hbm3.json"))
    bsub = b.add_subparsers(required=True, metavar="ACTION")
    show = _command(bsub, "show", "list the cases of a baseline file (or of every file in a directory)",
                    ("perfgate baseline show", "perfgate baseline show baselines/nvidia-h100-80gb-hbm3.json"))
    show.add_argument("path", type=Path, nargs="?", default=Path("baselines"),
                      help="a baseline file or a directory of them (default baselines/)")
    show.set_defaults(func=_lazy("perfgate.cli.gate", "baseline_show"))
    diff = _command(bsub, "diff", "old vs new per changed case (for a baseline-update PR)",
                    ("git show main:baselines/x.json > old.json && perfgate baseline diff old.json baselines/x.json",))
    diff.add_argument("old", type=Path, help="the baseline before (a missing file: every case is new)")
    diff.add_argument("new", type=Path, help="the baseline after")
    diff.add_argument("--format", choices=("md", "text"), default="md", help="Markdown (default) or plain text")
    diff.set_defaults(func=_lazy("perfgate.cli.gate", "baseline_diff"))


def _analyze_parser(sub: Any) -> None:
    a = _command(sub, "analyze", "summarise .nsys-rep/.sqlite/.ncu-rep/ncu CSV/torch JSON files",
                 ("perfgate analyze profile.nsys-rep", "perfgate analyze a.ncu-rep b.ncu-rep --output-dir report/",
                  "perfgate analyze trace.json --format json > trace.analysis.json"))
    a.add_argument("files", type=Path, nargs="+", help="profiler outputs (the kind is sniffed from the content)")
    a.add_argument("--format", choices=("json", "md"), default="md", help="what to print on stdout")
    a.add_argument("--output-dir", type=Path, help="write report.md, analysis.json and charts here")
    a.add_argument("--no-charts", action="store_true", help="with --output-dir: skip the charts")
    a.set_defaults(func=_lazy("perfgate.cli.analyze", "analyze"))


def _history_parser(sub: Any) -> None:
    h = _command(sub, "history", "list stored runs, or a case's trend (reads only)",
                 ("perfgate history --last 10", "perfgate history --case '*softmax*' --format csv"))
    _settings_options(h, "db_path")
    h.add_argument("--case", help="shell pattern on case ids: show their trend instead of the runs")
    h.add_argument("--last", type=int, default=20, help="the last N runs (default 20)")
    h.add_argument("--format", choices=("table", "csv", "json"), default="table", help="output format")
    h.set_defaults(func=_lazy("perfgate.cli.data", "history"))


def _db_parser(sub: Any) -> None:
    d = _command(sub, "db", "history databases", ("perfgate db merge all.db runner1.db runner2.db",))
    dsub = d.add_subparsers(required=True, metavar="ACTION")
    merge = _command(dsub, "merge", "merge histories from several runners into OUT (idempotent)",
                     ("perfgate db merge all.db runner1.db runner2.db",))
    merge.add_argument("out", type=Path, help="the history to merge into (created when missing)")
    merge.add_argument("inputs", type=Path, nargs="+", help="histories to read (read only)")
    merge.set_defaults(func=_lazy("perfgate.cli.data", "db_merge"))


def _import_parser(sub: Any) -> None:
    i = _command(sub, "import-benchmark", "store pytest-benchmark JSON files (--benchmark-json) as runs",
                 ("pytest --benchmark-json=bench.json && perfgate import-benchmark bench.json",))
    _settings_options(i, "db_path")
    i.add_argument("files", type=Path, nargs="+", help="pytest-benchmark JSON files")
    i.set_defaults(func=_lazy("perfgate.cli.data", "import_benchmark"))


def _ci_parser(sub: Any) -> None:
    c = _command(sub, "ci", "GitHub Actions helpers",
                 ("perfgate ci init --runner-label gpu-h100", "perfgate ci annotate perfgate.json"))
    csub = c.add_subparsers(required=True, metavar="ACTION")
    ann = _command(csub, "annotate", "print ::error/::warning workflow commands for a results JSON",
                   ("perfgate ci annotate results/perfgate.json",))
    ann.add_argument("results", type=Path, help="perfgate.json written by --perfgate-json")
    ann.set_defaults(func=_lazy("perfgate.cli.ci", "annotate"))
    com = _command(csub, "comment", "create or update the one perfgate comment on a pull request",
                   ("GITHUB_TOKEN=... perfgate ci comment summary.md --repo owner/name --pr 12",
                    "perfgate ci comment h100.md a100.md --repo owner/name --pr 12 --marker perfgate-matrix"))
    com.add_argument("summary", type=Path, nargs="+",
                     help="the Markdown summary to post; several (matrix jobs) become one comment")
    com.add_argument("--repo", required=True, help="owner/name")
    com.add_argument("--pr", type=int, required=True, help="pull request number")
    com.add_argument("--token-env", default="GITHUB_TOKEN", help="environment variable holding the token")
    com.add_argument("--api-url", default="https://api.github.com", help="GitHub REST API base URL")
    com.add_argument("--marker", default="perfgate", help="one sticky comment per marker (matrix jobs: one each)")
    com.set_defaults(func=_lazy("perfgate.cli.ci", "comment"))
    init = _command(csub, "init", "write a starter workflow that runs the perfgate composite action",
                    ("perfgate ci init --runner-label gpu-h100 --action-ref owner/perfgate@<40-hex commit sha>",))
    init.add_argument("--output", type=Path, default=Path(".github/workflows/perfgate.yml"),
                      help="where to write the workflow (default .github/workflows/perfgate.yml)")
    init.add_argument("--action-ref", default="perfgate/perfgate@v1", help="owner/repo@ref of the action")
    init.add_argument("--runner-label", default="gpu", help="the self-hosted GPU runner's label")
    init.add_argument("--pytest-args", default="tests/perf", help="what the gate runs (default tests/perf)")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(func=_lazy("perfgate.cli.ci", "init"))


def _lazy(module: str, name: str) -> Handler:
    """Import a command's module only when it runs: `perfgate --version` stays instant."""
    def run(args: argparse.Namespace) -> int:
        import importlib

        handler: Handler = getattr(importlib.import_module(module), name)
        return handler(args)

    return run


if __name__ == "__main__":
    raise SystemExit(main())
