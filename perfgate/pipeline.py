"""After the cases ran: profile -> store -> compare -> outputs -> baseline. Shared by plugin and CLI."""

from __future__ import annotations

import getpass
import os
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from perfgate.baseline import Baseline, updated_baseline, write_baseline
from perfgate.measure.environment import command_line, git_info
from perfgate.model import GateResult, Run, RunInfo
from perfgate.report.json_out import render_json
from perfgate.report.markdown import render_markdown
from perfgate.session import PerfgateSession
from perfgate.settings import Settings


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def build_run(session: PerfgateSession, profile_settings: str = "") -> Run:
    commit, branch, dirty = git_info(session.rootdir)
    assert session.environment is not None  # set at configure time whenever the gate is enabled
    info = RunInfo(started_at=session.started_at, finished_at=utc_now(), git_commit=commit, git_branch=branch,
                   git_dirty=dirty, hostname=session.environment.hostname, argv=command_line(),
                   profile_settings=profile_settings)
    return Run(info=info, environment=session.environment,
               results=tuple(session.results[k] for k in sorted(session.results)))


def store_run(run: Run, db_path: Path) -> Run:
    from perfgate.store import open_store

    store = open_store(db_path)
    try:
        return replace(run, run_id=store.save_run(run))
    finally:
        store.close()


def write_outputs(gate: GateResult, run: Run | None, settings: Settings, charts: tuple[str, ...] = ()) -> None:
    markdown = None
    if settings.summary_path or os.environ.get("GITHUB_STEP_SUMMARY"):
        markdown = render_markdown(gate, charts, run=run)
    if settings.summary_path:
        _write(settings.summary_path, markdown or "")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:  # GitHub appends every step's summary
            fh.write(markdown or "")
    if settings.json_path:
        _write(settings.json_path, render_json(gate, run))


def _write(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def who() -> str:
    for var in ("GITHUB_ACTOR", "USER", "USERNAME"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def maybe_write_baseline(run: Run, baseline: Baseline | None, path: Path, settings: Settings) -> str:
    """Write the baseline when asked to, or when none exists yet; returns a line for the user or ''."""
    if settings.update_baseline:
        reason = settings.reason
        new = updated_baseline(baseline, run, path, who(), reason)
        write_baseline(new)
        return f"perfgate: baseline {path} updated with {len(run.results)} case(s): {reason}"
    if baseline is None and run.results:
        write_baseline(updated_baseline(None, run, path, who(), "initial baseline (none existed)"))
        return (f"perfgate: no baseline for {run.environment.device_name}; wrote {path} from this run "
                f"({len(run.results)} case(s)). Review and commit it.")
    return ""

