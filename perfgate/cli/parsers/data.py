"""The commands over stored data and profiler files: `analyze`, `history`, `report` (the dashboard), `db`
(merge, export, prune, pin, metadata) and `import-benchmark`; handlers in cli/analyze.py, cli/data.py,
cli/report.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfgate.cli import arg_types
from perfgate.cli.parsers import command, lazy, settings_options
from perfgate.config.options import history_arg


def add_analyze(sub: Any) -> None:
    a = command(
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
    a.set_defaults(func=lazy("perfgate.cli.analyze", "analyze"))


def add_history(sub: Any) -> None:
    h = command(
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
    settings_options(h, "db_path")
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
    h.set_defaults(func=lazy("perfgate.cli.data", "history"))


def add_report(sub: Any) -> None:
    r = command(
        sub,
        "report",
        "write the history as a static HTML dashboard (reads only)",
        ("perfgate report --html site/", "perfgate report --html site/ --db runner.db --summaries 20"),
    )
    settings_options(r, "db_path", "baseline_dir", "repo_url")
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
    r.set_defaults(func=lazy("perfgate.cli.report", "report"))


def add_db(sub: Any) -> None:
    d = command(
        sub,
        "db",
        "history databases: merge, export, prune, pin, metadata",
        ("perfgate db merge all.db runner1.db runner2.db", "perfgate db prune --keep-runs 1000"),
    )
    dsub = d.add_subparsers(required=True, metavar="ACTION")
    # the order of `perfgate db --help`'s action list
    for add in (_db_merge, _db_export, _db_prune, _db_pin, _db_metadata):
        add(dsub)


def _db_merge(dsub: Any) -> None:
    merge = command(
        dsub,
        "merge",
        "merge histories from several runners into OUT (idempotent)",
        ("perfgate db merge all.db runner1.db runner2.db",),
    )
    merge.add_argument(
        "out", type=history_arg, help="the history to merge into: a file (created when missing) or a postgresql:// URL"
    )
    merge.add_argument("inputs", type=history_arg, nargs="+", help="histories to read (read only): files or URLs")
    merge.set_defaults(func=lazy("perfgate.cli.data", "db_merge"))


def _db_export(dsub: Any) -> None:
    export = command(
        dsub,
        "export",
        "copy only the named runs into OUT (what one CI job uploads)",
        ("perfgate db export job.db --results results/perfgate.json",),
    )
    settings_options(export, "db_path", "publish_host")
    export.add_argument("out", type=history_arg, help="the history to write (created, or merged into): a file or a URL")
    export.add_argument("--run-uid", action="append", help="a run's identity (repeatable)")
    export.add_argument("--results", type=Path, help="the run a results file (perfgate.json) describes")
    export.set_defaults(func=lazy("perfgate.cli.data", "db_export"))


def _db_prune(dsub: Any) -> None:
    prune = command(
        dsub,
        "prune",
        "remove old runs (never pinned ones or those a baseline refers to), then compact the file",
        ("perfgate db prune --keep-runs 1000 --older-than 90",),
    )
    settings_options(prune, "db_path", "baseline_dir")
    prune.add_argument("--keep-runs", type=arg_types.COUNT, metavar="N", help="always keep the newest N runs")
    prune.add_argument(
        "--older-than", type=arg_types.AGE_DAYS, metavar="DAYS", help="only remove runs started more than DAYS days ago"
    )
    prune.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    prune.add_argument("--no-vacuum", action="store_true", help="skip the compaction (VACUUM)")
    prune.set_defaults(func=lazy("perfgate.cli.data", "db_prune"))


def _db_pin(dsub: Any) -> None:
    pin = command(
        dsub,
        "pin",
        "keep runs whatever prune is asked",
        ('perfgate db pin 812 --reason "change point: softmax +12%%"',),
    )
    settings_options(pin, "db_path")
    pin.add_argument("runs", type=arg_types.RUN_ID, metavar="RUN", nargs="+", help="run ids")
    pin.add_argument("--reason", required=True, help="why the run must stay")
    pin.set_defaults(func=lazy("perfgate.cli.data", "db_pin"))


def _db_metadata(dsub: Any) -> None:
    meta = command(
        dsub,
        "metadata",
        "print Datasette metadata describing the history's tables",
        ("perfgate db metadata > metadata.json && datasette .perfgate/history.db --metadata metadata.json",),
    )
    meta.add_argument(
        "--db", type=history_arg, help="the history it is for (its file name is Datasette's database name)"
    )
    meta.set_defaults(func=lazy("perfgate.cli.data", "db_metadata"))


def add_import(sub: Any) -> None:
    i = command(
        sub,
        "import-benchmark",
        "store pytest-benchmark JSON files (--benchmark-json, saved runs) as runs; seed this machine's baseline",
        (
            "pytest --benchmark-json=bench.json && perfgate import-benchmark bench.json",
            "perfgate import-benchmark --seed-baseline .benchmarks/Linux-CPython-3.11-64bit/0003_main.json",
        ),
    )
    settings_options(i, "db_path", "baseline_dir")
    i.add_argument(
        "--seed-baseline",
        action="store_true",
        help="also add the cases this machine's host baseline lacks, marked imported (the files must come "
        "from this machine's CPU)",
    )
    i.add_argument("files", type=Path, nargs="+", help="pytest-benchmark JSON files")
    i.set_defaults(func=lazy("perfgate.cli.data", "import_benchmark"))
