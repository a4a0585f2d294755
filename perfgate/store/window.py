"""The noise of a case read from its history: the most recent passing gate runs' process medians.

For the decision rule's "noise from history" (docs/decision-rule.md): given a device model
(`Environment.comparability_key()`), a branch and a window W, each case's last W gated runs on that branch whose
verdict for the case was not a failing one (store/verdicts.py OUT_OF_WINDOW; an inconclusive run is kept: it is
noise the rule must learn), newest first. A run whose gate failed keeps its other cases: leaving every case of a
failed run out kept a slow mode the calibration missed out of the noise of every case, since the runs it made fail
were the runs that showed it (issue 31: 7-8 of 50 unchanged 100-case runs failed). Only the run's own median (not
its confirmation processes': those were measured because the run looked suspect), its speedup when the case has a
reference, and its median in SM cycles when a clock probe read it. `from_run_id` (one for all cases, or per case)
starts the window at a change point or a baseline update: runs stored before it are not read.

Bounded whatever the history holds: the window is looked for among the newest `look_back` gate runs of the
device model on the branch (found newest first through idx_runs_gate, migration 13), and per case by an index
walk over cases(case_id, run_id) from the newest run down, stopped at W (`newest_per_case`: a few statements
for thousands of cases), so a case reads what it keeps, at 10 or 100,000 stored runs per case alike
(tests/test_bounded_reads.py and tests/test_fleet.py count the rows visited). "Newest" is the order runs
were stored in (run id), which a merged history keeps per input.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from perfgate.model import RunKind, Verdict
from perfgate.store import Store, checks
from perfgate.store.verdicts import OUT_OF_WINDOW


@dataclass(frozen=True)
class PassingGateMedian:
    """One passing gate run of one case: the run's own process median, and its speedup when it has one."""

    run_id: int
    git_commit: str
    started_at: str
    median_ms: float
    speedup: float | None
    median_mcycles: float | None = None
    verdict: Verdict | None = None  # the case's verdict in that run (gate/window.py: an uncalibrated case's window)


LOOK_BACK_FACTOR = 10  # the window looks at most this many times its size of gate runs back


_SELECT = (
    "SELECT c.case_id, r.id AS run_id, r.git_commit, r.started_at, c.median_ms, s.median AS speedup, c.median_mcycles, "
    "c.verdict "
    "FROM cases c JOIN runs r ON r.id = c.run_id "
    "LEFT JOIN speedups s ON s.run_id = c.run_id AND s.case_id = c.case_id "
    "WHERE r.kind = :kind AND r.gate_failed IS NOT NULL {branch} AND r.device_kind = :device_kind "
    "AND r.device_name = :device_name AND r.compute_capability = :capability "
    "AND (c.verdict IS NULL OR c.verdict NOT IN ({failing}))"
)
CHUNK_CASES = 50  # cases per statement: one statement text, prepared once and reused for every chunk


def newest_per_case(
    store: Store, select: str, starts: Mapping[str, int], limit: int, params: Mapping[str, object]
) -> Iterator[tuple[Any, ...]]:
    """The rows of `select` (over `cases c` joined with `runs r`, its own WHERE clause) for each case of
    `starts`, newest first,
    from the case's start on, at most `limit` a case. One branch per case in a UNION ALL of CHUNK_CASES: each
    an equality on case_id, a range on run_id and a LIMIT, which both SQLite and PostgreSQL answer by walking
    cases(case_id, run_id) from the newest run down and stopping at the limit: a case reads what it keeps
    (and the rows the filters skip), never its whole history. The same bound on runs r keeps a planner that
    prefers to hash a small runs table to the runs since the start."""
    ids = sorted(starts)
    for at in range(0, len(ids), CHUNK_CASES):
        chunk = ids[at : at + CHUNK_CASES]
        values: dict[str, object] = {**params, "limit": limit}
        branches = []
        for i, cid in enumerate(chunk):
            values[f"c{i}"], values[f"f{i}"] = cid, starts[cid]
            branches.append(
                f"SELECT * FROM ({select} AND c.case_id = :c{i} AND c.run_id >= :f{i} AND r.id >= :f{i} "
                f"ORDER BY c.run_id DESC LIMIT :limit) AS b{i}"
            )
        yield from store.db.tuples(" UNION ALL ".join(branches), values)


def newest_runs_floor(store: Store, device_name: str, kind: RunKind, branch: str | None, runs: int) -> int | None:
    """The id of the oldest of the newest `runs` runs of this kind on this device model (and branch, when
    given); None when there are none. Read through idx_runs_gate: `runs` index entries, whatever the history
    holds."""
    sql = "SELECT min(id) AS floor FROM (SELECT id FROM runs WHERE device_name = :device AND kind = :kind"
    params: dict[str, object] = {"device": device_name, "kind": kind.value, "runs": max(runs, 1)}
    if branch is not None:
        sql += " AND git_branch = :branch"
        params["branch"] = branch
    found = store.query(sql + " ORDER BY id DESC LIMIT :runs) AS newest", params)
    return None if not found or found[0]["floor"] is None else int(found[0]["floor"])


def recent_passing_gate_medians(
    store: Store,
    device_key: tuple[str, str, str],
    branch: str | None,
    window: int,
    case_ids: Iterable[str],
    from_run_id: int | Mapping[str, int] | None = None,
    look_back: int | None = None,
) -> dict[str, tuple[PassingGateMedian, ...]]:
    """Per case id asked for, up to `window` passing gate runs on `branch` (None: any branch) and this device
    model, newest first, among the device model's newest `look_back` gate runs (default LOOK_BACK_FACTOR x
    window); a case with none maps to (). Every value re-validated as it is read."""
    wanted = sorted(set(case_ids))
    out: dict[str, list[PassingGateMedian]] = {cid: [] for cid in wanted}
    if window <= 0 or not wanted:
        return {cid: () for cid in wanted}
    kind, name, capability = device_key
    floor = newest_runs_floor(store, name, RunKind.GATE, branch, look_back or LOOK_BACK_FACTOR * window)
    if floor is None:
        return {cid: () for cid in wanted}
    # one lower bound per case (the index range starts there): its window start, or the floor if later
    if isinstance(from_run_id, Mapping):
        first = {cid: max(int(from_run_id.get(cid, 0)), floor) for cid in wanted}
    else:
        first = dict.fromkeys(wanted, max(int(from_run_id or 0), floor))
    failing = ", ".join(f"'{v.value}'" for v in sorted(OUT_OF_WINDOW, key=lambda v: v.value))
    select = _SELECT.format(branch="AND r.git_branch = :branch" if branch is not None else "", failing=failing)
    params = {
        "kind": RunKind.GATE.value,
        "branch": branch,
        "device_kind": kind,
        "device_name": name,
        "capability": capability,
    }
    with store.errors("read the noise window"):
        for case_id, run_id, commit, started_at, median_ms, speedup, mcycles, verdict in newest_per_case(
            store, select, first, window, params
        ):
            where = f"run {run_id} case {case_id!r}"
            out[case_id].append(
                PassingGateMedian(
                    run_id=int(run_id),
                    git_commit=checks.run_text(commit, where),
                    started_at=checks.run_time(started_at, where),
                    median_ms=checks.time_ms(median_ms, f"{where} median_ms", positive=True),
                    speedup=None
                    if speedup is None
                    else checks.number(speedup, f"{where} speedup", high=checks.MAX_SPEEDUP, low_open=True),
                    median_mcycles=None
                    if mcycles is None
                    else checks.number(mcycles, f"{where} median_mcycles", high=checks.MAX_MCYCLES, low_open=True),
                    verdict=_verdict(verdict, where),
                )
            )
    return {cid: tuple(v) for cid, v in out.items()}


def _verdict(value: object, where: str) -> Verdict | None:
    """A stored case verdict, or None (a run stored before verdicts were); anything else is a damaged row."""
    if value is None:
        return None
    try:
        return Verdict(value)
    except ValueError:
        raise checks.StoredValueError(f"{where}: verdict {value!r} is not a verdict") from None
