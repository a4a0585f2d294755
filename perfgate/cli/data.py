"""`perfgate history`, `perfgate db merge|export|prune|pin|metadata`, `perfgate import-benchmark`: the
history as data."""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfgate.cli.settings import command_settings
from perfgate.errors import PerfgateError, ReportFileError
from perfgate.inputs import load_json_file
from perfgate.model import RunKind
from perfgate.store import open_store
from perfgate.store.query import as_dicts, case_trend, list_runs

if TYPE_CHECKING:
    from perfgate.config.settings import Settings


def history(args: argparse.Namespace) -> int:
    """Reads only: an absent history is an error, never a new empty file."""
    if args.changes:
        from perfgate.cli.changes import history_changes

        return history_changes(args)
    settings = command_settings(args)
    with open_store(settings.db_path, readonly=True) as store:
        by_case = args.case is not None or args.case_regex is not None
        rows = as_dicts(
            case_trend(store, args.case, args.last, args.case_regex, args.kind)
            if by_case
            else list_runs(store, args.last, args.kind)
        )
    print(_render(_scrubbed(rows), args.format), end="")
    return 0


def _scrubbed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with their secrets masked as the gate's terminal table masks them (a CI log is published):
    case ids as the gate publishes them (`t[***]`), every other text (a branch, a kernel) as an identifier."""
    from perfgate.report.scrub import terminal_scrubber

    scrubber = terminal_scrubber(os.environ)
    scrubber.reserve(str(v) for row in rows for k, v in row.items() if k in ("case_id", "nodeid"))

    def one(key: str, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if key == "argv":
            return scrubber.text(value)
        return scrubber.case_id(value) if key in ("case_id", "nodeid") else scrubber.identifier(value)

    return [{k: one(k, v) for k, v in row.items()} for row in rows]


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

    def cell(key: str, value: object) -> str:
        if key.endswith("_ms") and isinstance(value, float):
            return fmt_value(value, "ms")
        if key == "git_commit":
            return str(value)[:12] or "-"
        return str(value) if value != "" else "-"

    keys = [k for k in rows[0] if k not in ("argv", "hostname", "git_dirty")]
    table = [tuple(cell(k, r[k]) for k in keys) for r in rows]
    return "\n".join(render_table(table, tuple(keys))) + "\n"


def db_merge(args: argparse.Namespace) -> int:
    from perfgate.store.merge import merge_histories

    for count in merge_histories(args.out, list(args.inputs)):
        print(f"perfgate: {count.source}: {count.added} run(s) added, {count.already_there} already in {args.out}")
    return 0


def db_export(args: argparse.Namespace) -> int:
    """Only the named runs into OUT (created, or merged into): what one CI job uploads."""
    from perfgate.store.merge import merge_histories

    uids = list(args.run_uid or [])
    if args.results is not None:
        uids += _results_run_uids(args.results)
    if not uids:
        raise PerfgateError("perfgate db export: name the runs: --run-uid UID or --results perfgate.json")
    settings = command_settings(args)
    from perfgate.report.scrub import export_scrubber

    # what is uploaded is published: scrubbed like every output (hostname and paths only with publish_host)
    scrubber = export_scrubber(settings.rootdir, settings.publish_host, os.environ)
    (count,) = merge_histories(
        args.out,
        [settings.db_path],
        run_uids=uids,
        transform=lambda run, verdicts: (scrubber.run(run), scrubber.verdicts(verdicts)),
    )
    print(
        f"perfgate: exported {count.added} run(s) of {settings.db_path} to {args.out}"
        + (f" ({count.already_there} already there)" if count.already_there else "")
    )
    return 0


def _results_run_uids(path: Path) -> list[str]:
    """The stored runs a results file (perfgate.json) describes: its run, and an A/B run's base side."""
    doc = load_json_file(path, ReportFileError)
    run = doc.get("run") if isinstance(doc, dict) else None
    uid = run.get("run_uid") if isinstance(run, dict) else None
    if not isinstance(uid, str) or not re.fullmatch(r"[\w.-]{1,200}", uid):
        raise ReportFileError(path, "no run.run_uid (a results file written by pytest --perfgate --perfgate-json)")
    ab = doc.get("ab")
    base = ab.get("base_run_uid") if isinstance(ab, dict) else None
    if base is None:
        return [uid]
    if not isinstance(base, str) or not re.fullmatch(r"[\w.-]{1,200}", base):
        raise ReportFileError(path, "ab.base_run_uid is not a run identity")
    return [base, uid]


def db_prune(args: argparse.Namespace) -> int:
    import datetime as dt

    from perfgate.baseline import load_baseline
    from perfgate.store.prune import BaselineRefs, compact, file_bytes, plan_prune, remove_runs

    settings = command_settings(args)
    baselines = (
        [b for f in sorted(settings.baseline_dir.glob("*.json")) if (b := load_baseline(f)) is not None]
        if settings.baseline_dir.is_dir()
        else []
    )
    now = dt.datetime.now(dt.timezone.utc)
    with open_store(settings.db_path) as store:
        plan = plan_prune(store, now, args.keep_runs, args.older_than, BaselineRefs.of(baselines))
        before = file_bytes(settings.db_path)  # a file's size read beside the open store, or the server asked
        if not args.dry_run:
            remove_runs(store, plan.remove)
            if not args.no_vacuum:
                compact(store)
    after = file_bytes(settings.db_path)
    verb = "would remove" if args.dry_run else "removed"
    print(
        f"perfgate: {settings.db_path}: {verb} {len(plan.remove)} of {plan.runs_before} run(s); kept "
        f"{plan.kept_pinned} pinned and {plan.kept_by_baseline} a baseline refers to; "
        f"{before:,} -> {after:,} bytes"
    )
    return 0


def db_pin(args: argparse.Namespace) -> int:
    from perfgate.measure.environment import utc_now

    settings = command_settings(args)
    with open_store(settings.db_path) as store:
        for run_id in args.runs:
            store.pin_run(run_id, args.reason, utc_now())
    print(f"perfgate: pinned run(s) {', '.join(map(str, args.runs))} in {settings.db_path}: {args.reason}")
    return 0


def db_metadata(args: argparse.Namespace) -> int:
    from perfgate.store.metadata import datasette_metadata

    print(json.dumps(datasette_metadata(args.db.stem if isinstance(args.db, Path) else "history"), indent=2))
    return 0


def import_benchmark(args: argparse.Namespace) -> int:
    from perfgate.parse.pytest_benchmark import read_pytest_benchmark

    # all read and checked before anything is stored
    runs = [replace(run, info=replace(run.info, kind=RunKind.IMPORT)) for run in map(read_pytest_benchmark, args.files)]
    settings = command_settings(args)
    with open_store(settings.db_path) as store:
        for path, run in zip(args.files, runs):
            if store.has_run_uid(run.info.run_uid):
                print(f"perfgate: {path}: already imported")
                continue
            run_id = store.save_run(run)
            print(f"perfgate: {path}: stored as run {run_id} ({len(run.results)} case(s)) in {settings.db_path}")
    if args.seed_baseline:
        _seed_baseline(args.files, settings)
    return 0


def _seed_baseline(files: list[Path], settings: Settings) -> None:
    """Each file's cases the host baseline lacks, marked imported (baseline/imported.py)."""
    from perfgate.baseline import baseline_path
    from perfgate.baseline.imported import seed_baseline_file
    from perfgate.measure.environment import current_environment, who

    env = current_environment(use_cuda=False)
    path = baseline_path(settings.baseline_dir, env)
    for source in files:
        seeded = seed_baseline_file(source, path, env, who(), settings.rootdir)
        print(
            f"perfgate: {source}: seeded {len(seeded.added)} case(s) into {path}, marked imported"
            + (f" ({len(seeded.kept)} already there, kept)" if seeded.kept else "")
        )
