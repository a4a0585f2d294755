"""The history as data: runs, per-case trends, and a pandas DataFrame for notebooks (`perfgate.history`).

The database itself is plain SQLite, browsable with Datasette or sqlite-utils; the views `case_history`
(one row per run and case) and `latest_case_results` (each case's most recent result per device) are the
tables to start from (docs/history.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from perfgate.store import Store, open_store


@dataclass(frozen=True)
class RunRow:
    run_id: int
    started_at: str
    git_commit: str
    git_branch: str
    device_name: str
    hostname: str
    cases: int
    argv: str


@dataclass(frozen=True)
class TrendRow:
    run_id: int
    started_at: str
    git_commit: str
    device_name: str
    case_id: str
    timer: str
    median_ms: float
    q1_ms: float
    q3_ms: float
    n_samples: int


def list_runs(store: Store, last: int) -> list[RunRow]:
    rows = store.query(
        "SELECT r.id, r.started_at, r.git_commit, r.git_branch, r.device_name, r.hostname, r.argv, "
        "(SELECT count(*) FROM cases c WHERE c.run_id = r.id) AS cases FROM runs r ORDER BY r.id DESC LIMIT ?",
        (max(last, 0),))
    return [RunRow(int(r["id"]), r["started_at"] or "", r["git_commit"] or "", r["git_branch"] or "",
                   r["device_name"] or "", r["hostname"] or "", int(r["cases"]), r["argv"] or "")
            for r in reversed(rows)]


def case_trend(store: Store, pattern: str, last: int) -> list[TrendRow]:
    """Cases whose id matches the shell pattern, over the last `last` runs, oldest first."""
    rows = store.query(
        "SELECT r.id, r.started_at, r.git_commit, r.device_name, c.case_id, c.timer, c.median_ms, c.q1_ms, "
        "c.q3_ms, c.n_samples FROM cases c JOIN runs r ON r.id = c.run_id "
        "WHERE c.case_id GLOB ? AND r.id IN (SELECT id FROM runs ORDER BY id DESC LIMIT ?) "
        "ORDER BY c.case_id, r.id", (pattern, max(last, 0)))
    return [TrendRow(int(r["id"]), r["started_at"] or "", r["git_commit"] or "", r["device_name"] or "",
                     r["case_id"], r["timer"] or "", r["median_ms"], r["q1_ms"], r["q3_ms"], int(r["n_samples"]))
            for r in rows]


def as_dicts(rows: list[Any]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]


def history_frame(db: Path, case: str | None = None, last: int | None = None) -> Any:
    """A DataFrame: one row per run (no `case`) or per run and matching case, oldest first."""
    from perfgate.errors import require

    pd: Any = require("pandas", "data", "perfgate.history")
    with open_store(db, readonly=True) as store:
        n = last if last is not None else 1_000_000_000
        rows = as_dicts(case_trend(store, case, n) if case else list_runs(store, n))
    frame = pd.DataFrame(rows)
    if "started_at" in frame:
        frame["started_at"] = pd.to_datetime(frame["started_at"], utc=True, errors="coerce")
    return frame
