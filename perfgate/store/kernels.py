"""Compiled kernels <-> history rows (migration 7): `compiled_cases` holds what a case was called with and what
compiled it, `kernels` one row per kernel and launch configuration, in launch order (`idx`). Columns are
listed here, not derived from the records; what is read back is re-validated by the same reader as a
baseline's or a child's record (compiled/codec.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from perfgate.compiled import codec
from perfgate.compiled.records import CompiledCase
from perfgate.model import CaseResult
from perfgate.store.checks import StoredValueError

CASE_COLUMNS = ("run_id", "case_id", "inputs_sha", "inputs", "arch", "versions", "notes")
FACT_COLUMNS = (
    "registers_per_thread",
    "spill_store_bytes",
    "spill_load_bytes",
    "stack_bytes_per_thread",
    "static_shared_bytes",
    "dynamic_shared_bytes",
    "num_warps",
    "num_stages",
)
OCCUPANCY_COLUMNS = (
    "blocks_per_sm",
    "warps_per_block",
    "max_warps_per_sm",
    "by_registers",
    "by_shared_memory",
    "by_warps",
    "by_blocks",
)
KERNEL_COLUMNS = (
    "run_id",
    "case_id",
    "idx",
    "kernel_key",
    "name",
    "source",
    *FACT_COLUMNS,
    "block_x",
    "block_y",
    "block_z",
    "grid_x",
    "grid_y",
    "grid_z",
    "occupancy_pct",
    "occupancy_limiter",
    *OCCUPANCY_COLUMNS,
    "sass_sha",
    "launches",
    "detail",
)


def case_rows(run_id: int, results: Sequence[CaseResult]) -> Iterator[tuple[Any, ...]]:
    for r in results:
        c = r.compiled
        if c is not None:
            versions = json.dumps(dict(c.versions), sort_keys=True)
            yield (run_id, r.case_id, c.inputs_sha, c.inputs, c.arch, versions, json.dumps(list(c.notes)))


def kernel_rows(run_id: int, results: Sequence[CaseResult]) -> Iterator[tuple[Any, ...]]:
    for r in results:
        for i, k in enumerate(r.compiled.kernels if r.compiled else ()):
            d = codec.to_dict(CompiledCase((k,), ""))["kernels"][0]
            occ = d["occupancy"] or {}
            yield (
                run_id,
                r.case_id,
                i,
                k.key or k.name,
                k.name,
                k.source.value,
                *(d[f] for f in FACT_COLUMNS),
                *(d["block"] or (None, None, None)),
                *(d["grid"] or (None, None, None)),
                occ.get("pct"),
                occ.get("limiter"),
                *(occ.get(f) for f in OCCUPANCY_COLUMNS),
                k.sass_sha,
                k.launches,
                k.detail,
            )


def compiled_from_rows(case_rows: list[dict[str, Any]], kernel_rows: list[dict[str, Any]]) -> dict[str, CompiledCase]:
    """{case id: its compiled kernels}; StoredValueError naming the run and case for anything untrue."""
    kernels: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(kernel_rows, key=lambda r: (r["case_id"], r["idx"])):
        kernels.setdefault(row["case_id"], []).append(_kernel_dict(row))
    out = {}
    for row in case_rows:
        where = f"run {row['run_id']} case {row['case_id']!r} compiled kernels"
        try:
            raw = {
                "inputs_sha": row["inputs_sha"],
                "inputs": row["inputs"],
                "arch": row["arch"],
                "versions": json.loads(row["versions"] or "{}"),
                "notes": json.loads(row["notes"] or "[]"),
                "kernels": kernels.get(row["case_id"], []),
            }
            out[str(row["case_id"])] = codec.from_dict(raw, where)
        except (ValueError, TypeError) as err:  # json.JSONDecodeError is a ValueError
            raise StoredValueError(str(err) if str(err).startswith(where) else f"{where}: {err}") from err
    return out


def _kernel_dict(row: dict[str, Any]) -> dict[str, Any]:
    block = [row["block_x"], row["block_y"], row["block_z"]]
    grid = [row["grid_x"], row["grid_y"], row["grid_z"]]
    occupancy = None
    if row["occupancy_limiter"] is not None:
        occupancy = {f: row[f] for f in OCCUPANCY_COLUMNS} | {"limiter": row["occupancy_limiter"]}
    return {
        "name": row["name"],
        "key": row["kernel_key"],
        "source": row["source"],
        **{f: row[f] for f in FACT_COLUMNS},
        "block": None if block[0] is None else block,
        "grid": None if grid[0] is None else grid,
        "occupancy": occupancy,
        "sass_sha": row["sass_sha"] or "",
        "launches": row["launches"],
        "detail": row["detail"] or "",
    }
