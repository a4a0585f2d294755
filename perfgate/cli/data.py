"""`perfgate history`, `perfgate db merge`, `perfgate import-benchmark`: the history as data."""

from __future__ import annotations

import argparse
import csv
import io
import json
from typing import Any

from perfgate.cli.settings import command_settings
from perfgate.store import open_store
from perfgate.store.query import as_dicts, case_trend, list_runs


def history(args: argparse.Namespace) -> int:
    """Reads only: an absent history is an error, never a new empty file."""
    settings = command_settings(args)
    with open_store(settings.db_path, readonly=True) as store:
        rows = as_dicts(case_trend(store, args.case, args.last) if args.case else list_runs(store, args.last))
    print(_render(rows, args.format), end="")
    return 0


def _render(rows: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(rows, indent=2, allow_nan=False) + "\n"
    if not rows:
        return "" if fmt == "csv" else "perfgate: no runs match\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buf.getvalue()
    from perfgate.report.format import fmt_value
    from perfgate.report.terminal import render_table

    def cell(key: str, value: Any) -> str:
        if key.endswith("_ms") and isinstance(value, float):
            return fmt_value(value, "ms")
        if key == "git_commit":
            return str(value)[:12] or "-"
        return str(value) if value != "" else "-"

    keys = [k for k in rows[0] if k not in ("argv", "hostname")]
    table = [tuple(cell(k, r[k]) for k in keys) for r in rows]
    return "\n".join(render_table(table, tuple(keys))) + "\n"


def db_merge(args: argparse.Namespace) -> int:
    from perfgate.store.merge import merge_histories

    for count in merge_histories(args.out, list(args.inputs)):
        print(f"perfgate: {count.source}: {count.added} run(s) added, {count.already_there} already in {args.out}")
    return 0


def import_benchmark(args: argparse.Namespace) -> int:
    from perfgate.parse.pytest_benchmark import read_pytest_benchmark

    runs = [read_pytest_benchmark(f) for f in args.files]  # all read and checked before anything is stored
    settings = command_settings(args)
    with open_store(settings.db_path) as store:
        for path, run in zip(args.files, runs):
            if store.has_run_uid(run.info.run_uid):
                print(f"perfgate: {path}: already imported")
                continue
            run_id = store.save_run(run)
            print(f"perfgate: {path}: stored as run {run_id} ({len(run.results)} case(s)) in {settings.db_path}")
    return 0
