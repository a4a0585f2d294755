"""Change points in the history: each case's run medians per device model -> named steps with commit ranges.

One point per run: the run's own median (its first process). Confirmation processes re-measure only
suspect cases, so adding them would bias exactly the runs that looked slow. The series of a case is kept
per device model (`runs.device_name`), as its baselines are. `perfgate history --changes`, the
dashboard and (later) the noise window all call `history_change_points`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from perfgate.store import Store
from perfgate.trends.changepoints import ChangePointSettings, Step, find_steps


@dataclass(frozen=True)
class RunPoint:
    run_id: int
    git_commit: str
    git_branch: str
    started_at: str
    median_ms: float


@dataclass(frozen=True)
class HistoryChange:
    """A step in one case's time on one device model, between two stored runs."""

    case_id: str
    device_name: str
    step: Step
    last_before: RunPoint
    first_after: RunPoint

    @property
    def change_pct(self) -> float:
        return self.step.change_pct

    @property
    def slower(self) -> bool:
        return self.step.change_pct > 0


@dataclass(frozen=True)
class CaseChanges:
    case_id: str
    device_name: str
    points: int  # runs in the series
    changes: tuple[HistoryChange, ...]


def case_series(store: Store, case_id: str, device_name: str, branch: str | None = None) -> tuple[RunPoint, ...]:
    """One case's run medians on one device model, oldest first (non-finite or non-positive medians skipped)."""
    sql = ("SELECT r.id, r.git_commit, r.git_branch, r.started_at, c.median_ms FROM cases c "
           "JOIN runs r ON r.id = c.run_id WHERE c.case_id = ? AND coalesce(r.device_name, '') = ?")
    params: list[object] = [case_id, device_name]
    if branch is not None:
        sql += " AND r.git_branch = ?"
        params.append(branch)
    rows = store.query(sql + " ORDER BY r.id", params)
    return tuple(RunPoint(int(r["id"]), r["git_commit"] or "", r["git_branch"] or "", r["started_at"] or "",
                          float(r["median_ms"])) for r in rows if _usable(r["median_ms"]))


def _usable(value: object) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def series_keys(store: Store, pattern: str | None = None) -> list[tuple[str, str]]:
    """(case id, device model) of every stored series, sorted; `pattern` is a shell pattern on case ids."""
    sql = "SELECT DISTINCT c.case_id, r.device_name FROM cases c JOIN runs r ON r.id = c.run_id"
    params: list[object] = []
    if pattern:
        sql += " WHERE c.case_id GLOB ?"
        params.append(pattern)
    return [(r["case_id"], r["device_name"] or "") for r in store.query(sql + " ORDER BY 1, 2", params)]


def changes_in(series: tuple[RunPoint, ...], case_id: str, device_name: str,
               settings: ChangePointSettings | None = None) -> CaseChanges:
    """The steps of one series, each with its commit range (the last run before, the first after)."""
    steps = find_steps([p.median_ms for p in series], settings) if series else ()
    changes = tuple(HistoryChange(case_id, device_name, st, series[st.index - 1], series[st.index]) for st in steps)
    return CaseChanges(case_id, device_name, len(series), changes)


def history_change_points(store: Store, pattern: str | None = None, branch: str | None = None,
                          settings: ChangePointSettings | None = None) -> Iterator[CaseChanges]:
    """Per (case, device model), in order: the change points of its history (empty `changes` when none)."""
    for case_id, device in series_keys(store, pattern):
        yield changes_in(case_series(store, case_id, device, branch), case_id, device, settings)
