"""Runs copied from one history into another as they are stored: every row read is re-validated (the same
checks `load_run` makes), then written back with its new run id, without rebuilding the records and
serialising them again. What `db merge` spends per run is then about what ATTACH + INSERT spends, plus
the checks (scripts/fleet_bench.py measures both). A batch of runs is read with one query per table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from perfgate.credentials import mask_credentials
from perfgate.parse.invariants import MAX_TIME_MS
from perfgate.store import Store, checks, packed, rows

# child table -> (its columns, the check of one row read back)
_CHILDREN: dict[str, tuple[tuple[str, ...], Any]] = {
    "cases": (rows.CASE_COLUMNS, lambda r: rows.case_from_row(r, (), None, (), None, with_samples=False)),
    "metrics": (rows.METRIC_COLUMNS, rows.metric_from_row),
    "gpu_state": (("run_id", "case_id", *rows.GPU_COLUMNS), rows.gpu_from_row),
    "autotune": (rows.AUTOTUNE_COLUMNS, lambda r: checks.case_id(r["case_id"], "autotune")),
    "speedups": (rows.SPEEDUP_COLUMNS, rows.speedup_from_row),
    "unmeasured_tests": (rows.UNMEASURED_COLUMNS, rows.unmeasured_from_row),
    "verdicts": (rows.VERDICT_COLUMNS, rows.verdict_from_row),
}
_RUN_COLUMNS = (*rows.RUN_COLUMNS, "gate_failed")


def copy_runs(src: Store, dst: Store, runs: Sequence[tuple[int, str]]) -> list[int]:
    """Copy the source runs (id, the identity to store them under) into `dst` in one transaction; their
    new ids, in order (an identity `dst` holds already keeps its run and adds nothing)."""
    if not runs:
        return []
    ids = {"ids": json.dumps([run_id for run_id, _ in runs])}
    listed = f"SELECT CAST(value AS BIGINT) FROM ({src.dialect.json_values('ids')}) AS v"
    with src.errors("read the runs to copy"):
        found = {int(r["id"]): r for r in src.db.rows(f"SELECT * FROM runs WHERE id IN ({listed})", ids)}
        children: dict[str, dict[int, list[dict[str, Any]]]] = {}
        for table, (_, check) in _CHILDREN.items():
            by_run = children[table] = {}
            for r in src.db.rows(f"SELECT * FROM {table} WHERE run_id IN ({listed})", ids):
                check(r)
                by_run.setdefault(int(r["run_id"]), []).append(r)
        for row in found.values():
            rows.run_from_row(row, (), ())
        _check_samples([r for by_run in children["cases"].values() for r in by_run])
    dst._writable()
    new_ids = []
    with dst.errors("store the copied runs"), dst.db.transaction():
        for run_id, uid in runs:
            new_ids.append(_insert(dst, found[run_id], uid, {t: c.get(run_id, []) for t, c in children.items()}))
    return new_ids


def _check_samples(cases: list[dict[str, Any]]) -> None:
    """Every packed sample array of the batch at once (finite times in [0, MAX_TIME_MS]); where one is not,
    the row-by-row check names it."""
    import numpy as np

    blobs = [r["samples_f64"] for r in cases]
    if all(isinstance(b, bytes) and len(b) % packed.ITEM_BYTES == 0 for b in blobs):
        values = np.frombuffer(b"".join(blobs), "<f8")
        if values.size == 0 or (np.isfinite(values).all() and values.min() >= 0 and values.max() <= MAX_TIME_MS):
            return
    for r in cases:
        checks.samples(packed.unpack_f64(r["samples_f64"]), f"run {r['run_id']} case {r['case_id']!r} samples_f64")


def _insert(dst: Store, run: dict[str, Any], uid: str, children: dict[str, list[dict[str, Any]]]) -> int:
    values = {c: run[c] for c in _RUN_COLUMNS}
    values["run_uid"] = uid
    values["argv"] = mask_credentials(values["argv"]) if isinstance(values["argv"], str) else values["argv"]
    new_id = dst.db.insert_id(rows.insert_sql("runs", _RUN_COLUMNS) + " ON CONFLICT (run_uid) DO NOTHING", values)
    if new_id is None:
        return int(dst.db.rows("SELECT id FROM runs WHERE run_uid = :uid", {"uid": uid})[0]["id"])
    for table, (columns, _) in _CHILDREN.items():
        if children[table]:
            dst.db.executemany(
                rows.insert_sql(table, columns),
                ({**{c: r[c] for c in columns}, "run_id": new_id} for r in children[table]),
            )
    return new_id
