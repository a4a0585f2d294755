"""A case's compiled kernels for its page (stored since migration 7, perfgate/compiled/): per device model,
the latest run's kernels with their static facts, and the runs where a kernel's facts changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfgate.report.site.history_data import RunMeta
from perfgate.store import Store
from perfgate.store.kinds import OUTSIDE_AB

FACTS = ("registers", "spills", "shared", "occupancy", "sass")
MAX_CHANGES = 50  # per device model: the latest ones

_SQL = (
    "SELECT k.run_id, coalesce(r.device_name, '') AS device_name, k.kernel_key, k.name, k.source, "
    "k.registers_per_thread, k.spill_store_bytes, k.spill_load_bytes, k.static_shared_bytes, "
    "k.dynamic_shared_bytes, k.num_warps, k.num_stages, k.block_x, k.block_y, k.block_z, k.grid_x, k.grid_y, "
    "k.grid_z, k.occupancy_pct, k.occupancy_limiter, k.sass_sha, k.launches "
    "FROM kernels k JOIN runs r ON r.id = k.run_id "
    f"WHERE k.case_id = :case_id AND {OUTSIDE_AB} ORDER BY 2, k.run_id, k.idx"
)


def case_kernels(store: Store, case_id: str, runs: Mapping[int, RunMeta]) -> dict[str, dict[str, Any]]:
    """{device model: {"run", "commit", "kernels": [...latest run's...], "changes": [...]}}."""
    by_device: dict[str, list[dict[str, Any]]] = {}
    for r in store.query(_SQL, {"case_id": case_id}):
        if int(r["run_id"]) in runs:
            by_device.setdefault(r["device_name"], []).append(_kernel(r))
    out = {}
    for device, rows in by_device.items():
        last = rows[-1]["run"]
        out[device] = {
            "run": last,
            "commit": runs[last].git_commit[:12],
            "kernels": [k for k in rows if k["run"] == last],
            "changes": _changes(rows, runs)[-MAX_CHANGES:],
        }
    return out


def _kernel(r: Mapping[str, Any]) -> dict[str, Any]:
    spills = None
    if r["spill_store_bytes"] is not None or r["spill_load_bytes"] is not None:
        spills = (r["spill_store_bytes"] or 0) + (r["spill_load_bytes"] or 0)
    shared = None
    if r["static_shared_bytes"] is not None or r["dynamic_shared_bytes"] is not None:
        shared = (r["static_shared_bytes"] or 0) + (r["dynamic_shared_bytes"] or 0)
    block = [r["block_x"], r["block_y"], r["block_z"]]
    grid = [r["grid_x"], r["grid_y"], r["grid_z"]]
    return {
        "run": int(r["run_id"]),
        "key": str(r["kernel_key"] or r["name"] or ""),
        "name": str(r["name"] or ""),
        "source": str(r["source"] or ""),
        "registers": r["registers_per_thread"],
        "spills": spills,
        "shared": shared,
        "warps": r["num_warps"],
        "stages": r["num_stages"],
        "block": block if block[0] is not None else None,
        "grid": grid if grid[0] is not None else None,
        "occupancy": r["occupancy_pct"],
        "limiter": str(r["occupancy_limiter"] or ""),
        "sass": str(r["sass_sha"] or ""),
        "launches": r["launches"],
    }


def _changes(rows: list[dict[str, Any]], runs: Mapping[int, RunMeta]) -> list[dict[str, Any]]:
    """Each run where a kernel's static facts differ from the run that launched it before."""
    previous: dict[str, dict[str, Any]] = {}
    out = []
    for k in rows:
        before = previous.get(k["key"])
        previous[k["key"]] = k
        if before is None:
            continue
        what = [f"{f} {_text(before[f])} -> {_text(k[f])}" for f in FACTS if before[f] != k[f]]
        if what:
            out.append(
                {
                    "kernel": k["key"],
                    "run": k["run"],
                    "commit": runs[k["run"]].git_commit[:12],
                    "before": {"run": before["run"], "commit": runs[before["run"]].git_commit[:12]},
                    "what": "; ".join(what),
                }
            )
    return out


def _text(value: object) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
