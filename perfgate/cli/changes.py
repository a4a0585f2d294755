"""`perfgate history --changes`: the step changes in each case's history, per device model, with commit ranges."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from perfgate.cli.settings import command_settings
from perfgate.errors import ConfigError
from perfgate.store import AcceptedChange, Store, open_store
from perfgate.trends.changepoints import ChangePointSettings
from perfgate.trends.history import CaseChanges, HistoryChange, history_change_points


def history_changes(args: argparse.Namespace) -> int:
    if not (args.min_change >= 0 and args.min_change < float("inf")):
        raise ConfigError(f"perfgate: --min-change must be a finite percentage >= 0, got {args.min_change}")
    if args.accept is not None and not args.accept.strip():
        raise ConfigError("perfgate: --accept needs a reason (why these steps are the new normal)")
    settings = command_settings(args)
    with open_store(settings.db_path, readonly=args.accept is None) as store:
        found = list(
            history_change_points(
                store,
                args.case,
                args.branch,
                ChangePointSettings(min_change_pct=args.min_change),
                getattr(args, "case_regex", None),
            )
        )
        found, skipped = _named_untouched(store, found, settings.rootdir)
        if args.accept is not None:
            accepted = accept_changes(store, found, args.accept)
            print(
                f"perfgate: accepted {accepted} change point(s): each case's noise window now starts after its "
                f"step (the runs are pinned)"
            )
            return 0
    from perfgate.report.scrub import scrub_rendered

    # a CI log is published: secrets in case ids masked as the gate's own table masks them
    print(scrub_rendered(render_changes(found, args.format), os.environ), end="")
    for line in skipped:
        print(line, file=sys.stderr)
    return 0


def _named_untouched(store: Store, found: list[CaseChanges], rootdir: Path) -> tuple[list[CaseChanges], list[str]]:
    """Each step whose commit range touched none of its case's files (the files the first run after it
    recorded) marked so (gate/untouched.py); the lines saying why a range could not be checked."""
    from perfgate.gate.untouched import code_check, repository_top, with_untouched_steps

    top = repository_top(rootdir) if any(case.changes for case in found) else None
    if top is None:
        return found, []
    runs: dict[int, Any] = {}
    out, skipped = [], list[str]()
    for case in found:
        changes = []
        for c in case.changes:
            rid = c.first_after.run_id
            if rid not in runs:
                runs[rid] = store.load_run(rid).results
            named, lines = with_untouched_steps([c], code_check(runs[rid], rootdir, top))
            changes += named
            skipped += [line for line in lines if line not in skipped]
        out.append(replace(case, changes=tuple(changes)))
    return out, skipped


def accept_changes(store: Store, found: list[CaseChanges], reason: str) -> int:
    """Record each found step as accepted (the latest per case and device is where its window starts)."""
    from perfgate.measure.environment import utc_now

    now = utc_now()
    count = 0
    for case in found:
        for change in case.changes:
            store.accept_change(
                AcceptedChange(
                    change.case_id, change.device_name, change.first_after.run_id, change.change_pct, now, reason
                )
            )
            count += 1
    return count


def change_row(c: HistoryChange) -> dict[str, Any]:
    return {
        "case_id": c.case_id,
        "device_name": c.device_name,
        "change_pct": round(c.change_pct, 3),
        "before_ms": c.step.before_median,
        "after_ms": c.step.after_median,
        "p_value": c.step.p_value,
        "last_before_run": c.last_before.run_id,
        "last_before_commit": c.last_before.git_commit,
        "first_after_run": c.first_after.run_id,
        "first_after_commit": c.first_after.git_commit,
        "first_after_at": c.first_after.started_at,
        "cause": c.cause,
    }


def render_changes(found: list[CaseChanges], fmt: str) -> str:
    rows = [change_row(c) for case in found for c in case.changes]
    if fmt == "json":
        return json.dumps(rows, indent=2, allow_nan=False) + "\n"
    if fmt == "csv":
        import csv
        import io

        buf = io.StringIO()
        if rows:
            writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        return buf.getvalue()
    return _table(found)


def _table(found: list[CaseChanges]) -> str:
    from perfgate.report.format import fmt_value
    from perfgate.report.terminal import render_table

    changes = [c for case in found for c in case.changes]
    devices = {case.device_name for case in found}
    head = f"perfgate: {len(changes)} change point(s) in {len(found)} case series on {len(devices)} device model(s)"
    if not changes:
        return head + "\n"
    table = [
        (
            c.case_id,
            c.device_name or "-",
            f"{c.change_pct:+.1f}%",
            f"{fmt_value(c.step.before_median, 'ms')} -> {fmt_value(c.step.after_median, 'ms')}",
            f"{c.last_before.git_commit[:12] or '-'}..{c.first_after.git_commit[:12] or '-'}",
            f"{c.last_before.run_id}..{c.first_after.run_id}",
            f"{c.step.p_value:.3g}",
            "machine (same commit)" if c.cause == "machine" else c.cause,
        )
        for c in changes
    ]
    header = ("case", "device", "step", "time", "commits (last before..first after)", "runs", "p", "cause")
    return head + "\n" + "\n".join(render_table(table, header)) + "\n"
