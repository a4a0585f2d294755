"""The history as data: runs, per-case trends, and a pandas DataFrame for notebooks (`perfgate.history`).

The database itself is plain SQLite, browsable with Datasette or sqlite-utils; the views `case_history`
(one row per run and case) and `latest_case_results` (each case's most recent result per device) are the
tables to start from (docs/history.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from perfgate.errors import PerfgateError
from perfgate.store import Store, checks, open_store
from perfgate.store import rows as stored_rows
from perfgate.store.kinds import kind_condition


@dataclass(frozen=True)
class RunRow:
    run_id: int
    kind: str  # gate, calibration, import ("" for a run stored before kinds were recorded)
    started_at: str
    git_commit: str
    git_branch: str
    git_dirty: bool
    device_name: str
    hostname: str
    cases: int
    gate: str  # passed, failed, or "" when not gated
    argv: str


@dataclass(frozen=True)
class TrendRow:
    run_id: int
    kind: str
    started_at: str
    git_commit: str
    git_dirty: bool
    device_name: str
    case_id: str
    verdict: str  # the case's most severe verdict when it was gated, "" otherwise
    timer: str
    time_ms: float  # the run's time for the case, as the gate showed it: the mean of its processes' medians
    processes: int  # this process and its confirmation processes
    median_ms: float  # this process's samples: median, quartiles, count
    q1_ms: float
    q3_ms: float
    n_samples: int


def list_runs(store: Store, last: int, kind: str = "") -> list[RunRow]:
    """The last `last` runs of `kind` (ab_pairs.kind_condition: "" every kind but A/B runs'), oldest first."""
    rows = store.query(
        "SELECT r.id, r.kind, r.started_at, r.git_commit, r.git_branch, r.git_dirty, r.device_name, r.hostname, "
        "r.gate_failed, r.argv, (SELECT count(*) FROM cases c WHERE c.run_id = r.id) AS cases "
        f"FROM runs r WHERE {kind_condition(kind)} ORDER BY r.id DESC LIMIT ?",
        (max(last, 0),),
    )
    return [_run_row(store, r) for r in reversed(rows)]


def _run_row(store: Store, r: dict[str, Any]) -> RunRow:
    """A run as `perfgate history` lists it: its texts verified (started_at a time) and printable (a
    history from elsewhere cannot print terminal escapes or a `::error::` line of its own)."""
    where = f"run {r['id']}"
    with store.errors(f"read {where}"):
        return RunRow(
            int(r["id"]),
            r["kind"] or "",
            checks.run_time(r["started_at"], f"{where} started_at"),
            checks.run_text(r["git_commit"], f"{where} git_commit"),
            checks.run_text(r["git_branch"], f"{where} git_branch"),
            bool(r["git_dirty"]),
            checks.run_text(r["device_name"], f"{where} device_name"),
            checks.run_text(r["hostname"], f"{where} hostname"),
            int(r["cases"]),
            _gate(r["gate_failed"]),
            checks.run_text(r["argv"], f"{where} argv"),
        )


def _gate(failed: object) -> str:
    return "" if failed is None else ("failed" if failed else "passed")


class CasePatternError(PerfgateError):
    """A --case-regex that is not a regular expression."""


def case_matcher(pattern: str | None = None, regex: str | None = None) -> Callable[[str], bool]:
    """`pattern`: a shell-style pattern where only `*` and `?` are wildcards, so brackets in parametrized
    ids match themselves (`test_x[enum[BaseConverter]]`); `regex`: a Python regular expression searched
    in the id. Both: a case must match both."""
    tests: list[Callable[[str], object]] = []
    if pattern is not None:
        glob = re.compile("".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern), re.S)
        tests.append(glob.fullmatch)
    if regex is not None:
        try:
            tests.append(re.compile(regex).search)
        except re.error as err:
            raise CasePatternError(f"perfgate: --case-regex {regex!r} is not a regular expression: {err}") from None
    return lambda case_id: all(t(case_id) for t in tests)


def case_trend(
    store: Store, pattern: str | None, last: int, regex: str | None = None, kind: str = ""
) -> list[TrendRow]:
    """Cases whose id matches the pattern (and/or the regex), over the last `last` runs of `kind` (as in
    list_runs: A/B runs only when asked for), oldest first."""
    matches = case_matcher(pattern, regex)
    # the ids first (one pass over the (case_id, run_id) index, no row read), then only their rows
    with store.errors("read it"):  # a damaged index (text that is not UTF-8) fails here, in one line
        ids = [
            cid
            for (cid,) in store.con.execute("SELECT DISTINCT case_id FROM cases")
            if isinstance(cid, str) and matches(cid)
        ]
    where = kind_condition(kind)
    first = store.query(
        f"SELECT min(id) AS id FROM (SELECT r.id FROM runs r WHERE {where} ORDER BY r.id DESC LIMIT ?)", (max(last, 0),)
    )
    if not ids or first[0]["id"] is None:
        return []
    rows = store.query(
        "SELECT r.kind, r.started_at, r.git_commit, r.git_dirty, r.device_name, c.* "
        "FROM cases c JOIN runs r ON r.id = c.run_id "
        f"WHERE c.case_id IN (SELECT value FROM json_each(?)) AND c.run_id >= ? AND {where} "
        "ORDER BY c.case_id, c.run_id",
        (json.dumps(ids), first[0]["id"]),
    )
    return [_trend_row(store, r) for r in rows]


def _trend_row(store: Store, r: dict[str, Any]) -> TrendRow:
    with store.errors(f"read run {r['run_id']}"):  # every row shown is re-validated, like a run the gate reads
        case = stored_rows.case_from_row(r, (), None, (), None)
        kind = stored_rows.run_kind(r["kind"], f"run {r['run_id']}")
        verdict = stored_rows.case_verdict(r["verdict"], f"run {r['run_id']} case {case.case_id!r}")
        started_at = checks.run_time(r["started_at"], f"run {r['run_id']} started_at")
        commit, device = (checks.run_text(r[c], f"run {r['run_id']} {c}") for c in ("git_commit", "device_name"))
    t = case.timing
    return TrendRow(
        int(r["run_id"]),
        kind.value if kind else "",
        started_at,
        commit,
        bool(r["git_dirty"]),
        device,
        case.case_id,
        verdict.value if verdict else "",
        t.timer.value,
        case.time_ms,
        len(case.process_medians_ms),
        t.median_ms,
        t.q1_ms,
        t.q3_ms,
        t.n_samples,
    )


def as_dicts(rows: list[Any]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]


def history_frame(
    db: Path, case: str | None = None, last: int | None = None, case_regex: str | None = None, kind: str = ""
) -> Any:
    """A DataFrame: one row per run (no `case`) or per run and matching case, oldest first; A/B runs (whose
    two sides share a start time) only with kind="ab" or "all"."""
    from perfgate.errors import require

    pd: Any = require("pandas", "data", "perfgate.history")
    with open_store(db, readonly=True) as store:
        n = last if last is not None else 1_000_000_000
        by_case = case is not None or case_regex is not None
        rows = as_dicts(case_trend(store, case, n, case_regex, kind) if by_case else list_runs(store, n, kind))
    frame = pd.DataFrame(rows)
    if "started_at" in frame:
        frame["started_at"] = pd.to_datetime(frame["started_at"], utc=True, errors="coerce")
    return frame
