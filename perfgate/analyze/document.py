"""What `perfgate analyze` reports: one document per file, plus a comparison across files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfgate.analyze.ncu_diagnosis import diagnose
from perfgate.analyze.timeline import summarize_timeline
from perfgate.parse.load import detect, load
from perfgate.parse.records import NcuLaunch, Timeline


def analyze_file(path: Path) -> dict[str, Any]:
    """{"source", "type", ...}: timeline sources get kernels/memory/api/nvtx/gpu_idle; ncu sources
    get launches (name + metrics in base units) and a diagnosis per launch."""
    kind = detect(path)
    parsed = load(path)
    if isinstance(parsed, Timeline):
        return {"type": kind, **summarize_timeline(parsed)}
    return {"type": kind, "source": str(path), **ncu_document(parsed)}


def ncu_document(launches: list[NcuLaunch]) -> dict[str, Any]:
    return {
        "launches": [{"id": l.launch_id, "name": l.name, "nvtx": list(l.nvtx_ranges),
                      "metrics": {k: m.value for k, m in sorted(l.metrics.items())},
                      "units": {k: m.unit for k, m in sorted(l.metrics.items())}} for l in launches],
        "diagnosis": [diagnose(l).as_dict() for l in launches],
    }


def comparison(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Across files: per kernel name, time per file (timeline: total_ns; ncu: duration of its launches)."""
    table: dict[str, dict[str, float]] = {}
    for doc in documents:
        src = Path(doc["source"]).name
        if "kernels" in doc:
            for k in doc["kernels"]:
                table.setdefault(k["name"], {})[src] = k["total_ns"]
        for d in doc.get("diagnosis", []):
            if d["duration_ns"] is not None:
                row = table.setdefault(d["name"], {})
                row[src] = row.get(src, 0.0) + d["duration_ns"]
    return [{"name": name, "total_ns_by_file": by_file} for name, by_file in sorted(table.items())]
