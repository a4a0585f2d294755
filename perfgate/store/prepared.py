"""A run turned into the rows the history stores (in store/rows.py's columns), before any transaction begins.

Building and checking 5,000 case rows (packing each one's samples, encoding its JSON columns, checking
what it will read back as) is seconds of Python; done inside the write transaction it held SQLite's one
write lock all that time while a fleet of writers queued behind it. Prepared first, a transaction is the
run's insert (for its id) and one executemany per table.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from perfgate.credentials import mask_credentials
from perfgate.model import CaseResult, Run, RunInfo, Verdict
from perfgate.store import kernels, rows
from perfgate.store.database import Database
from perfgate.store.packed import pack_f64
from perfgate.store.verdicts import RunVerdicts

RUN_ID = 0  # in every prepared row until the run's id is known (each table's first column is run_id)


@dataclass(frozen=True)
class PreparedRun:
    run_uid: str
    run_values: dict[str, Any]
    tables: tuple[tuple[str, list[dict[str, Any]]], ...]  # INSERT statement, rows (run_id filled on write)


def prepare_run(run: Run, verdicts: RunVerdicts | None) -> PreparedRun:
    """Every row of the run, checked as it will be read back (StoredValueError names a bad one)."""
    if not run.info.run_uid:  # every stored run gets an identity, so merging it twice adds nothing
        run = replace(run, info=replace(run.info, run_uid=uuid.uuid4().hex))
    # a command line may carry a history URL with its password (--perfgate-db): never stored
    run = replace(run, info=replace(run.info, argv=mask_credentials(run.info.argv)))
    columns = (*rows.RUN_COLUMNS, "gate_failed")
    values = (*run_row(run), None if verdicts is None else int(verdicts.gate_failed))
    res = run.results
    by_case = verdicts.by_case() if verdicts is not None else {}
    case_rows = [case_row(RUN_ID, r, _value(by_case.get(r.case_id))) for r in res]
    for row in case_rows:  # what is stored must read back: nothing non-finite, nothing out of range
        rows.check_case_row(dict(zip(rows.CASE_COLUMNS, row)))
    tables = [
        (rows.insert_sql(table, names), _named(names, values_of))
        for table, names, values_of in (
            ("cases", rows.CASE_COLUMNS, case_rows),
            ("metrics", rows.METRIC_COLUMNS, metric_rows(RUN_ID, res)),
            ("gpu_state", ("run_id", "case_id", *rows.GPU_COLUMNS), gpu_rows(RUN_ID, res)),
            ("autotune", rows.AUTOTUNE_COLUMNS, autotune_rows(RUN_ID, res)),
            ("speedups", rows.SPEEDUP_COLUMNS, speedup_rows(RUN_ID, res)),
            ("compiled_cases", kernels.CASE_COLUMNS, kernels.case_rows(RUN_ID, res)),
            ("kernels", kernels.KERNEL_COLUMNS, kernels.kernel_rows(RUN_ID, res)),
            ("unmeasured_tests", rows.UNMEASURED_COLUMNS, unmeasured_rows(RUN_ID, run.info)),
        )
    ]
    if verdicts is not None:
        verdict_rows = (
            (RUN_ID, m.case_id, m.metric, m.kernel, m.verdict.value, _finite(m.change_pct), _finite(m.threshold_pct))
            for m in verdicts.metrics
        )
        tables.append((rows.insert_sql("verdicts", rows.VERDICT_COLUMNS), _named(rows.VERDICT_COLUMNS, verdict_rows)))
    return PreparedRun(run.info.run_uid, dict(zip(columns, values)), tuple(tables))


def write_prepared(db: Database, prepared: PreparedRun) -> int:
    """Inside the caller's transaction: the run's row, then its tables; the stored run's id when a run of
    this identity is there already (a retry, a second merge: nothing added)."""
    new_id = db.insert_id(
        rows.insert_sql("runs", tuple(prepared.run_values)) + " ON CONFLICT (run_uid) DO NOTHING",
        prepared.run_values,
    )
    if new_id is None:
        found = db.rows("SELECT id FROM runs WHERE run_uid = :uid", {"uid": prepared.run_uid})
        return int(found[0]["id"])
    for sql, table_rows in prepared.tables:
        for row in table_rows:
            row["run_id"] = new_id
        db.executemany(sql, table_rows)
    return new_id


def run_row(run: Run) -> tuple[Any, ...]:
    i, e = run.info, run.environment
    values: dict[str, Any] = {
        "run_uid": i.run_uid,
        "started_at": i.started_at,
        "finished_at": i.finished_at,
        "git_commit": i.git_commit,
        "git_branch": i.git_branch,
        "git_dirty": int(i.git_dirty),
        "argv": i.argv,
        "profile_settings": i.profile_settings,
    }
    values.update({c: getattr(e, c) for c in rows.ENV_COLUMNS})
    values["kind"] = i.kind.value if i.kind is not None else None
    values["ab_pair"] = i.ab_pair or None
    values["ab_anchor"] = 1 if i.ab_anchor else None
    return tuple(values[c] for c in rows.RUN_COLUMNS)


def case_row(run_id: int, r: CaseResult, verdict: str | None = None) -> tuple[Any, ...]:
    t = r.timing
    return (
        run_id,
        r.case_id,
        t.timer.value,
        t.n_samples,
        t.median_ms,
        t.mean_ms,
        t.stdev_ms,
        t.min_ms,
        t.max_ms,
        t.q1_ms,
        t.q3_ms,
        t.gbps,
        t.tflops,
        r.bytes_moved,
        r.flops,
        json.dumps(list(r.profile_errors)),
        r.nodeid,
        r.location[0] if r.location else None,
        r.location[1] if r.location else None,
        r.device_uuid,
        json.dumps(asdict(r.thresholds)),
        json.dumps(list(r.confirmation_medians_ms)),
        json.dumps(list(r.confirmation_speedups)),
        json.dumps(list(r.profile_notes)),
        pack_f64(r.samples_ms),
        verdict,
        json.dumps(asdict(r.host_state)) if r.host_state else None,
        json.dumps(list(r.confirmation_memory)),
        json.dumps([{**asdict(c), "role": c.role.value} for c in r.code]) if r.code else None,
        *_cycle_values(r),
    )


def _cycle_values(r: CaseResult) -> tuple[Any, ...]:
    c = r.cycles
    if c is None:
        return (None, None, None, None, None, None)
    mcycles = json.dumps(list(r.confirmation_mcycles))
    return (c.median_mcycles, c.clock_median_mhz, c.clock_min_mhz, c.clock_max_mhz, c.probed_samples, mcycles)


def metric_rows(run_id: int, results: Sequence[CaseResult]) -> Iterator[tuple[Any, ...]]:
    for r in results:
        for m in r.metrics:
            yield (run_id, r.case_id, m.source, m.kernel, m.name, m.value, m.unit)


def gpu_rows(run_id: int, results: Sequence[CaseResult]) -> Iterator[tuple[Any, ...]]:
    for r in results:
        if r.gpu_state is not None:
            g = asdict(r.gpu_state)
            g["clocks_locked"] = int(g["clocks_locked"])
            yield (run_id, r.case_id, *(g[c] for c in rows.GPU_COLUMNS))


def autotune_rows(run_id: int, results: Sequence[CaseResult]) -> Iterator[tuple[Any, ...]]:
    for r in results:
        for kernel, config in r.autotune:
            yield (run_id, r.case_id, kernel, config)


def speedup_rows(run_id: int, results: Sequence[CaseResult]) -> Iterator[tuple[Any, ...]]:
    for r in results:
        if r.speedup is not None:
            s = r.speedup
            yield (run_id, r.case_id, s.reference, s.median, s.ci_low, s.ci_high, pack_f64(s.reference_samples_ms))


def unmeasured_rows(run_id: int, info: RunInfo) -> Iterator[tuple[Any, ...]]:
    for u in info.unmeasured:
        yield (run_id, u.nodeid, u.outcome.value, u.reason)


def _named(names: Sequence[str], values: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(names, row)) for row in values]


def _value(verdict: Verdict | None) -> str | None:
    return verdict.value if verdict is not None else None


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
