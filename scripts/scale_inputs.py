"""Large inputs for the scale benchmark (scripts/bench_scale.py), built by replicating recorded H100
captures row for row: every kernel, runtime call, memset and NVTX range of the recorded export is copied
R times, shifted in time past the previous copy and given fresh correlation ids, so the big file is a
longer run of the same program (counts are exact multiples of the recording's).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NSYS_SQLITE = ROOT / "tests" / "data" / "h100" / "perfgate-nsys.sqlite"
TORCH_TRACE = ROOT / "tests" / "data" / "torch_trace.json"
REPLICATED = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMSET", "NVTX_EVENTS")


def recorded_kernels() -> int:
    con = sqlite3.connect(NSYS_SQLITE)
    try:
        return int(con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0])
    finally:
        con.close()


def build_nsys(kernels: int, out: Path) -> int:
    """An export with about `kernels` kernels (a whole number of copies); returns the copies."""
    copies = max(1, round(kernels / recorded_kernels()))
    shutil.copy(NSYS_SQLITE, out)
    con = sqlite3.connect(out)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    span = con.execute(
        "SELECT max(end) - min(start) + 1000 FROM (SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL "
        "UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME UNION ALL "
        "SELECT start, end FROM NVTX_EVENTS WHERE end IS NOT NULL)"
    ).fetchone()[0]
    corr = con.execute("SELECT max(correlationId) + 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
    for table in REPLICATED:
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        con.execute(f"CREATE TEMP TABLE orig_{table} AS SELECT * FROM {table}")
        for i in range(1, copies):
            exprs = []
            for c in cols:
                if c in ("start", "end"):
                    exprs.append(f"{c} + {i * span}")
                elif c == "correlationId":
                    exprs.append(f"{c} + {i * corr}")
                elif c == "rangeId":
                    exprs.append("NULL")
                else:
                    exprs.append(c)
            con.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join(exprs)} FROM orig_{table}")
    con.commit()
    con.close()
    return copies


def build_torch(events: int, out: Path) -> int:
    """A Chrome trace with about `events` events: the recorded trace's events repeated, each copy shifted,
    with one `ProfilerStep#k` annotation around each copy (as torch.profiler writes per step)."""
    doc = json.loads(TORCH_TRACE.read_text())
    base = [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    t0 = min(float(e["ts"]) for e in base)
    span = max(float(e["ts"]) + float(e.get("dur", 0)) for e in base) - t0 + 10.0
    corr_step = 1 + max((int(e.get("args", {}).get("correlation", 0)) for e in base), default=0)
    copies = max(1, events // len(base))
    host = next((e for e in base if e.get("cat") in ("cuda_runtime", "cuda_driver")), base[0])
    out_events = []
    for i in range(copies):
        shift = i * span
        out_events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{i}",
                "pid": host.get("pid"),
                "tid": host.get("tid"),
                "ts": t0 + shift - 1.0,
                "dur": span - 5.0,
            }
        )
        for e in base:
            c = dict(e)
            c["ts"] = float(e["ts"]) + shift
            if "correlation" in e.get("args", {}):
                c["args"] = {**e["args"], "correlation": int(e["args"]["correlation"]) + i * corr_step}
            out_events.append(c)
    out.write_text(json.dumps({**{k: v for k, v in doc.items() if k != "traceEvents"}, "traceEvents": out_events}))
    return copies
