"""Change points in the history: each case's run medians per device model -> named steps with commit ranges.

One point per run: the run's own median (its first process). Confirmation processes re-measure only
suspect cases, so adding them would bias exactly the runs that looked slow. The series of a case is kept
per device model (`runs.device_name`), as its baselines are. `perfgate history --changes`, the
dashboard call `history_change_points`; the gate names the recent, not yet accepted steps of the cases it
measured (`recent_changes`), beside its verdicts.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from perfgate.model import RunKind
from perfgate.store import Store, checks
from perfgate.store.checks import StoredValueError
from perfgate.store.kinds import OUTSIDE_AB
from perfgate.store.query import case_matcher
from perfgate.store.rows import STAT_COLUMNS, timing_from_row
from perfgate.store.window import newest_per_case, newest_runs_floor
from perfgate.trends.changepoints import ChangePointSettings, Step, find_steps


@dataclass(frozen=True)
class RunPoint:
    run_id: int
    git_commit: str
    git_branch: str
    started_at: str
    median_ms: float
    git_dirty: bool = False  # measured with uncommitted changes: its commit does not say what code ran


@dataclass(frozen=True)
class HistoryChange:
    """A step in one case's time on one device model, between two stored runs."""

    case_id: str
    device_name: str
    step: Step
    last_before: RunPoint
    first_after: RunPoint
    code_untouched: bool = False  # the commit range touched none of the case's files (gate/untouched.py)

    @property
    def change_pct(self) -> float:
        return self.step.change_pct

    @property
    def slower(self) -> bool:
        return self.step.change_pct > 0

    @property
    def cause(self) -> str:
        """ "machine" when the last run before and the first after measured the same commit: the code did
        not change across the step, so the machine (or its software) did; "not this case's code" when the
        commits between them touched none of its files; "code or machine" otherwise."""
        clean = not (self.last_before.git_dirty or self.first_after.git_dirty)
        same = clean and self.last_before.git_commit and self.last_before.git_commit == self.first_after.git_commit
        return "machine" if same else "not this case's code" if self.code_untouched else "code or machine"


@dataclass(frozen=True)
class CaseChanges:
    case_id: str
    device_name: str
    points: int  # runs in the series
    changes: tuple[HistoryChange, ...]


def case_series(
    store: Store, case_id: str, device_name: str, branch: str | None = None, last_runs: int | None = None
) -> tuple[RunPoint, ...]:
    """One case's run medians on one device model, oldest first (its newest `last_runs` when given: read
    newest first through the (case_id, run_id) index and stopped there). Every row is verified as `perfgate
    history --case` verifies it (store/rows.py: finite statistics >= 0, min <= q1 <= median <= q3 <= max); a
    damaged row is one StoreError line, never skipped. A median of 0 is refused too: a step is a ratio."""
    sql = (
        f"SELECT r.id, r.git_commit, r.git_branch, r.git_dirty, r.started_at, c.run_id, c.case_id, "
        f"{', '.join('c.' + col for col in STAT_COLUMNS)} FROM cases c "
        "JOIN runs r ON r.id = c.run_id WHERE c.case_id = :case_id AND coalesce(r.device_name, '') = :device "
        f"AND {OUTSIDE_AB}"  # an A/B run's base side is an older commit: it would make a step of its own
    )
    params: dict[str, object] = {"case_id": case_id, "device": device_name}
    if branch is not None:
        sql += " AND r.git_branch = :branch"
        params["branch"] = branch
    if last_runs is not None:
        sql += " ORDER BY c.run_id DESC LIMIT :last_runs"
        params["last_runs"] = max(last_runs, 0)
    else:
        sql += " ORDER BY c.run_id"
    points = []
    for r in store.query(sql, params):
        where = f"run {r['run_id']} case {r['case_id']!r}"
        with store.errors("read a case series"):
            median = timing_from_row(r, where).median_ms
            if median <= 0:
                raise StoredValueError(f"{where}: median_ms {median!r}: a change point needs a positive median")
            points.append(_point(r, median))
    return tuple(reversed(points)) if last_runs is not None else tuple(points)


def _point(r: dict[str, Any], median: float) -> RunPoint:
    """A run of a series, its texts verified and printable (store/checks.py: a history from elsewhere)."""
    where = f"run {r['id']}"
    return RunPoint(
        int(r["id"]),
        checks.run_text(r["git_commit"], f"{where} git_commit"),
        checks.run_text(r["git_branch"], f"{where} git_branch"),
        checks.run_time(r["started_at"], f"{where} started_at"),
        median,
        bool(r.get("git_dirty")),
    )


def _usable(value: object) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def series_keys(store: Store, pattern: str | None = None, regex: str | None = None) -> list[tuple[str, str]]:
    """(case id, device model) of every stored series, sorted; `pattern` and `regex` match case ids as
    `perfgate history --case` / `--case-regex` do (store/query.py: brackets in a pattern are themselves)."""
    matches = case_matcher(pattern, regex)
    rows = store.query(
        "SELECT DISTINCT c.case_id, r.device_name FROM cases c JOIN runs r ON r.id = c.run_id "
        f"WHERE {OUTSIDE_AB} ORDER BY 1, 2"
    )
    return [
        (r["case_id"], r["device_name"] or "") for r in rows if isinstance(r["case_id"], str) and matches(r["case_id"])
    ]


def changes_in(
    series: tuple[RunPoint, ...], case_id: str, device_name: str, settings: ChangePointSettings | None = None
) -> CaseChanges:
    """The steps of one series, each with its commit range (the last run before, the first after)."""
    steps = find_steps([p.median_ms for p in series], settings) if series else ()
    changes = tuple(HistoryChange(case_id, device_name, st, series[st.index - 1], series[st.index]) for st in steps)
    return CaseChanges(case_id, device_name, len(series), changes)


def history_change_points(
    store: Store,
    pattern: str | None = None,
    branch: str | None = None,
    settings: ChangePointSettings | None = None,
    regex: str | None = None,
    last_runs: int | None = None,
) -> Iterator[CaseChanges]:
    """Per (case, device model), in order: the change points of its history (of its newest `last_runs` runs
    when given; empty `changes` when none)."""
    for case_id, device in series_keys(store, pattern, regex):
        yield changes_in(case_series(store, case_id, device, branch, last_runs), case_id, device, settings)


RECENT_RUNS = 100  # the gate looks for steps in this many of a case's latest runs

_RECENT_SELECT = (
    "SELECT c.case_id, r.id AS run_id, r.git_commit, r.git_branch, r.started_at, c.median_ms "
    "FROM cases c JOIN runs r ON r.id = c.run_id WHERE r.device_name = :device AND r.kind = :kind {branch}"
)


def recent_changes(
    store: Store,
    case_ids: Sequence[str],
    device_name: str,
    branch: str | None,
    settings: ChangePointSettings | None = None,
    last_runs: int = RECENT_RUNS,
) -> list[HistoryChange]:
    """The steps in the latest `last_runs` gate runs of each case (on `branch`; None: any) that nobody has
    accepted yet (store.accept_change). Bounded: each case walks its newest runs down to the oldest of the
    device model's newest `last_runs` gate runs on the branch (store/window.py), whatever the history holds."""
    if not case_ids:
        return []
    floor = newest_runs_floor(store, device_name, RunKind.GATE, branch, last_runs)
    if floor is None:
        return []
    select = _RECENT_SELECT.format(branch="AND r.git_branch = :branch" if branch is not None else "")
    params = {"device": device_name, "kind": RunKind.GATE.value, "branch": branch}
    series: dict[str, list[RunPoint]] = {}
    starts = dict.fromkeys(case_ids, floor)
    with store.errors("read the recent runs of the gate's cases"):
        for case_id, run_id, commit, git_branch, started_at, median_ms in newest_per_case(
            store, select, starts, last_runs, params
        ):
            if _usable(median_ms):
                row = {"id": run_id, "git_commit": commit, "git_branch": git_branch, "started_at": started_at}
                series.setdefault(case_id, []).append(_point(row, float(median_ms)))
    for points in series.values():
        points.reverse()  # oldest first
    accepted: dict[str, int] = {}
    for a in store.accepted_changes(device_name, series):
        accepted[a.case_id] = max(accepted.get(a.case_id, 0), a.run_id)
    out: list[HistoryChange] = []
    for case_id, points in sorted(series.items()):
        recent = tuple(p for p in points if p.run_id > accepted.get(case_id, 0))
        out += changes_in(recent, case_id, device_name, settings).changes
    return out
