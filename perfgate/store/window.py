"""The noise of a case read from its history: the most recent passing gate runs' process medians.

For the decision rule's "noise from history" (docs/decision-rule.md): given a device model
(`Environment.comparability_key()`), a branch and a window W, each case's last W gate runs on that branch
whose gate passed and whose verdict for the case was neither a failing nor an inconclusive one (store/
verdicts.py OUT_OF_WINDOW), newest first. Only the run's own median (not its confirmation processes': those
were measured because the run looked suspect), its speedup when the case has a reference, and its median in
SM cycles when a clock probe read it. `from_run_id` (one for all cases, or per case) starts the window at
a change point or a baseline update: runs stored before it are not read.

One query: per case, an index walk over cases(case_id, run_id) from the newest run down, each step a
primary-key lookup of its run, stopping after W hits (bench_scale.py measures it at 1,000 cases x 1,000
runs). "Newest" is the order runs were stored in (run id), which a merged history keeps per input.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from perfgate.model import RunKind
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


_SQL = """
WITH wanted(case_id, from_id) AS (SELECT key, value FROM json_each(?))
SELECT w.case_id, r.id, r.git_commit, r.started_at, c.median_ms, s.median AS speedup, c.median_mcycles
FROM wanted w
JOIN cases c ON c.case_id = w.case_id AND c.run_id IN (
    SELECT c2.run_id FROM cases c2 JOIN runs r2 ON r2.id = c2.run_id
    WHERE c2.case_id = w.case_id AND c2.run_id >= w.from_id AND r2.kind = ? AND r2.gate_failed = 0
      AND (? IS NULL OR r2.git_branch = ?) AND r2.device_kind = ? AND r2.device_name = ? AND r2.compute_capability = ?
      AND (c2.verdict IS NULL OR c2.verdict NOT IN ({failing}))
    ORDER BY c2.run_id DESC LIMIT ?)
JOIN runs r ON r.id = c.run_id
LEFT JOIN speedups s ON s.run_id = c.run_id AND s.case_id = c.case_id
ORDER BY w.case_id, r.id DESC
"""


def recent_passing_gate_medians(
    store: Store,
    device_key: tuple[str, str, str],
    branch: str | None,
    window: int,
    case_ids: Iterable[str],
    from_run_id: int | Mapping[str, int] | None = None,
) -> dict[str, tuple[PassingGateMedian, ...]]:
    """Per case id asked for, up to `window` passing gate runs on `branch` (None: any branch) and this device
    model, newest first (a case with none maps to ()). Every value re-validated as it is read."""
    wanted = sorted(set(case_ids))
    out: dict[str, list[PassingGateMedian]] = {cid: [] for cid in wanted}
    if window <= 0 or not wanted:
        return {cid: () for cid in wanted}
    failing = ", ".join(f"'{v.value}'" for v in sorted(OUT_OF_WINDOW, key=lambda v: v.value))
    kind, name, capability = device_key
    if isinstance(from_run_id, Mapping):
        first = {cid: int(from_run_id.get(cid, 0)) for cid in wanted}
    else:
        first = dict.fromkeys(wanted, int(from_run_id or 0))
    params = (json.dumps(first), RunKind.GATE.value, branch, branch, kind, name, capability, window)
    with store.errors("read the noise window"):
        for case_id, run_id, commit, started_at, median_ms, speedup, mcycles in store.con.execute(
            _SQL.format(failing=failing), params
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
                )
            )
    return {cid: tuple(v) for cid, v in out.items()}
