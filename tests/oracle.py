"""The invariant oracle of the mutation campaign: what every exit-0 result of a reader must satisfy,
written from what the numbers mean (issue 23), independently of the readers' own checks. A result that
breaks one is a silent-wrong finding, as bad as a traceback: durations >= 0 (end >= start), timestamps
and sums within int64, shares within [0, 100], rates finite and >= 0 and no faster than any memory moves
(100 TB/s, issue 32), counts non-negative, medians and means within [min, max], names that are text.
Semantic mutations (tests/semantic.py) carry their own truth on top of these invariants.

Each check returns a list of violations (empty when the result can be true).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

INT64_MAX = 2**63 - 1
PCT_OVERSHOOT = 5.0  # ncu's counters read a little past 100 % (analyze/ncu_diagnosis.py says why)
ROUNDING = 1e-9
# Physics: no memory moves faster than 100 TB/s (12x the fastest HBM of 2025); a rate past it is damage
MAX_GBPS = 1e5
MAX_BYTES_PER_S = MAX_GBPS * 1e9


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _int(v: Any, low: int = 0, high: int = INT64_MAX) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


def _le(a: float, b: float) -> bool:
    return a <= b + ROUNDING * max(abs(a), abs(b), 1.0)


def duration_stats(where: str, s: dict[str, Any]) -> list[str]:
    out = []
    if not _int(s.get("count"), 1):
        return [f"{where}: count {s.get('count')!r} is not a positive integer"]
    if not all(_int(s.get(k)) for k in ("total_ns", "min_ns", "max_ns")):
        return [f"{where}: total/min/max must be integers in [0, 2**63): {s}"]
    if not all(_num(s.get(k)) for k in ("avg_ns", "median_ns", "stddev_ns")) or s["stddev_ns"] < 0:
        return [f"{where}: avg/median/stddev must be finite (stddev >= 0): {s}"]
    n, total, low, high = s["count"], s["total_ns"], s["min_ns"], s["max_ns"]
    if not low <= s["median_ns"] <= high:
        out.append(f"{where}: median {s['median_ns']} outside [min, max] = [{low}, {high}]")
    if not low <= s["avg_ns"] <= high:
        out.append(f"{where}: mean {s['avg_ns']} outside [min, max] = [{low}, {high}]")
    if not (n * low <= total <= n * high and total >= high):
        out.append(f"{where}: total {total} is not what {n} durations in [{low}, {high}] can sum to")
    return out


def analysis(doc: Any) -> list[str]:
    """`perfgate analyze --format json` for one file."""
    if not isinstance(doc, dict):
        return ["not an object"]
    out = [f"note {n!r} is not text" for n in doc.get("notes", []) if not isinstance(n, str)]
    if "launches" in doc:
        return out + ncu_analysis(doc)
    for section, key in (("kernels", "name"), ("memory", "kind"), ("api", "name"), ("nvtx", "range")):
        for i, row in enumerate(doc.get(section, [])):
            where = f"{section}[{i}]"
            if not isinstance(row.get(key), str):
                out.append(f"{where}: {key} {row.get(key)!r} is not text")
            out += duration_stats(where, row)
    kernels = doc.get("kernels", [])
    pct = [k.get("time_pct") for k in kernels]
    if any(not _num(p) or not 0 <= p <= 100 for p in pct):
        out.append(f"kernel time_pct outside [0, 100]: {[p for p in pct if not _num(p) or not 0 <= p <= 100][:3]}")
    elif kernels and sum(k["total_ns"] for k in kernels) > 0 and abs(sum(pct) - 100) > 1e-6:
        out.append(f"kernel time_pct sums to {sum(pct)}, not 100")
    total = sum(k.get("total_ns", 0) for k in kernels if isinstance(k.get("total_ns"), int))
    if total > INT64_MAX:
        out.append(f"kernel totals sum to {total}, past int64")
    for m in doc.get("memory", []):
        if not _int(m.get("bytes")) or (m.get("gbps") is not None and (not _num(m["gbps"]) or m["gbps"] < 0)):
            out.append(f"memory {m.get('kind')!r}: bytes {m.get('bytes')!r} / gbps {m.get('gbps')!r}")
        elif m.get("gbps") is not None and m["gbps"] > MAX_GBPS:
            out.append(f"memory {m.get('kind')!r}: {m['gbps']:g} GB/s, faster than any memory")
    return out + idle(doc.get("gpu_idle"))


def idle(g: Any) -> list[str]:
    if not isinstance(g, dict):
        return ["gpu_idle missing"]
    if not all(_int(g.get(k)) for k in ("busy_ns", "idle_ns", "span_ns")):
        return [f"gpu_idle: busy/idle/span must be integers >= 0: {g}"]
    out = []
    if g["busy_ns"] + g["idle_ns"] != g["span_ns"]:
        out.append(f"gpu_idle: busy + idle != span: {g}")
    u = g.get("utilization_pct")
    if u is not None and (not _num(u) or not 0 <= u <= 100):
        out.append(f"gpu_idle: utilization {u} outside [0, 100]")
    for gap in g.get("largest_gaps", []):
        if not (_int(gap.get("start_ns")) and _int(gap.get("gap_ns"))):
            out.append(f"gpu_idle: gap {gap}")
    return out


def nsys_rows(path: Any, doc: dict[str, Any]) -> list[str]:
    """Every row of the kernel, runtime and memset tables is either in a summary or in a counted note:
    nothing dropped silently."""
    import re
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        out = []
        for table, section, key in (
            ("CUPTI_ACTIVITY_KIND_KERNEL", "kernels", None),
            ("CUPTI_ACTIVITY_KIND_RUNTIME", "api", None),
            ("CUPTI_ACTIVITY_KIND_MEMSET", "memory", "memset"),
        ):
            if table not in tables:
                continue
            rows = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            counted = sum(r["count"] for r in doc.get(section, []) if key is None or r.get("kind") == key)
            dropped = sum(
                int(m.group(1).replace(",", ""))
                for n in doc.get("notes", [])
                if (m := re.match(rf"([\d,]+) {table} rows", n))
            )
            if counted + dropped != rows:
                out.append(f"{table}: {rows} rows, {counted} summarised and {dropped} noted as dropped")
        return out
    finally:
        con.close()


NCU_NONNEGATIVE = (
    "duration_ns",
    "dram_bytes",
    "dram_bandwidth_bps",
    "registers_per_thread",
    "shared_mem_per_block_bytes",
    "block_size",
    "grid_size",
    "waves_per_sm",
    "spill_requests",
)


def ncu_analysis(doc: dict[str, Any]) -> list[str]:
    out = []
    for i, launch in enumerate(doc.get("launches", [])):
        out += ncu_launch(
            f"launch[{i}]",
            launch.get("id"),
            launch.get("name"),
            launch.get("metrics", {}).items(),
            launch.get("units", {}),
        )
    for i, d in enumerate(doc.get("diagnosis", [])):
        where = f"diagnosis[{i}]"
        for key, value in d.items():
            if value is None or not key.endswith(("_pct", *NCU_NONNEGATIVE)):
                continue
            if not _num(value) or value < 0 or (key.endswith("_pct") and value > 100 + PCT_OVERSHOOT):
                out.append(f"{where}: {key} = {value!r}")
        out += [
            f"{where}: pipe {p}" for p in d.get("pipes", []) if not (_num(p[1]) and 0 <= p[1] <= 100 + PCT_OVERSHOOT)
        ]
        out += [f"{where}: stall {s}" for s in d.get("top_stalls", []) if not (_num(s[1]) and s[1] >= 0)]
        if not isinstance(d.get("name"), str) or not d["name"].strip():
            out.append(f"{where}: no kernel name")
    return out


def ncu_launch(
    where: str, launch_id: Any, name: Any, metrics: Iterable[tuple[str, Any]], units: dict[str, str]
) -> list[str]:
    out = []
    if not _int(launch_id):
        out.append(f"{where}: id {launch_id!r}")
    if not isinstance(name, str) or not name.strip():
        out.append(f"{where}: no kernel name ({name!r})")
    for metric, value in metrics:
        if isinstance(value, str):
            continue
        unit = units.get(metric, "")
        if not _num(value):
            out.append(f"{where}: {metric} = {value!r} is not a finite number")
        elif unit and not unit.startswith("%") and not 0 <= value <= INT64_MAX:
            out.append(f"{where}: {metric} = {value} {unit}: a count, size, time or rate out of range")
        elif unit == "byte/s" and value > MAX_BYTES_PER_S:
            out.append(f"{where}: {metric} = {value:g} byte/s, faster than any memory")
    return out


def timeline(t: Any) -> list[str]:
    """A parse.records.Timeline (nsys export or torch trace) as records."""
    out = []
    for kind, items in (
        ("kernel", t.kernels),
        ("memory op", t.memory_ops),
        ("api call", t.api_calls),
        ("range", t.nvtx_ranges),
    ):
        for item in items:
            if not (_int(item.start_ns) and _int(item.end_ns) and item.start_ns <= item.end_ns):
                out.append(f"{kind}: span [{item.start_ns}, {item.end_ns}]")
                break
    for k in t.kernels:
        if (
            not isinstance(k.name, str)
            or not all(_int(v) for v in (*k.grid, *k.block))
            or any(v is not None and not _int(v) for v in (k.registers_per_thread, k.shared_mem_bytes))
        ):
            out.append(f"kernel {k.name!r}: name or launch attributes")
            break
    if any(not _int(m.bytes) for m in t.memory_ops):
        out.append("memory op with a negative or huge size")
    if any(not isinstance(x, str) for x in (*(r.text for r in t.nvtx_ranges), *(a.name for a in t.api_calls))):
        out.append("a name that is not text")
    return out


def case_metrics(per_case: dict[str, list[Any]]) -> list[str]:
    return [
        f"{case}: {m.name} = {m.value!r}"
        for case, ms in per_case.items()
        for m in ms
        if not _num(m.value)
        or (m.unit and not m.unit.startswith("%") and m.value < 0)
        or (m.unit == "byte/s" and m.value > MAX_BYTES_PER_S)
    ]


def timing(where: str, t: Any, samples: Iterable[float]) -> list[str]:
    times = {k: getattr(t, k) for k in ("median_ms", "mean_ms", "stdev_ms", "min_ms", "max_ms", "q1_ms", "q3_ms")}
    if not all(_num(v) and v >= 0 for v in times.values()):
        return [f"{where}: timing {times}"]
    out = []
    order = [times[k] for k in ("min_ms", "q1_ms", "median_ms", "q3_ms", "max_ms")]
    if not all(_le(a, b) for a, b in zip(order, order[1:])):
        out.append(f"{where}: order statistics out of order {order}")
    if not (_le(t.min_ms, t.mean_ms) and _le(t.mean_ms, t.max_ms)):
        out.append(f"{where}: mean outside [min, max]")
    if any(not _num(v) or v < 0 for v in samples):
        out.append(f"{where}: a sample that is not a finite time")
    if not _int(t.n_samples):
        out.append(f"{where}: n_samples {t.n_samples!r}")
    return out


def case_result(r: Any) -> list[str]:
    out = timing(r.case_id, r.timing, (*r.samples_ms, *r.confirmation_medians_ms))
    out += [f"{r.case_id}: metric {m.name} = {m.value!r}" for m in r.metrics if not _num(m.value)]
    if r.speedup is not None and not (
        _num(r.speedup.median)
        and r.speedup.median > 0
        and _le(r.speedup.ci_low, r.speedup.median)
        and _le(r.speedup.median, r.speedup.ci_high)
    ):
        out.append(f"{r.case_id}: speedup {r.speedup}")
    return out


def baseline(b: Any) -> list[str]:
    out = []
    for cid, c in b.cases.items():
        spread = c.process_medians_ms or c.samples_ms
        if (
            not (_num(c.median_ms) and c.median_ms > 0)
            or not spread
            or not (_le(min(spread), c.median_ms) and _le(c.median_ms, max(spread)))
        ):
            out.append(f"{cid}: median {c.median_ms!r} vs its samples/process medians")
        if any(not _num(v) or v < 0 for v in (*c.samples_ms, *c.process_medians_ms, *c.process_speedups)):
            out.append(f"{cid}: a sample or process median that is not a finite time")
        if any(not _num(m.value) or m.value < 0 for m in c.metrics):
            out.append(f"{cid}: a metric that is not a finite value >= 0")
        if any(v is not None and (not _num(v) or v < 0) for v in (c.noise_pct, c.threshold_pct)):
            out.append(f"{cid}: noise/threshold")
    return out
