"""The JSON results file: every comparison and case statistic, for other tools to read."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any

from perfgate.model import GateResult, Run


def _clean(value: Any) -> Any:
    """JSON has no inf/nan: write null (a change from 0 has no finite percentage)."""
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value  # the model's enums are str enums: json writes their values


def results_document(gate: GateResult, run: Run | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "perfgate_json_version": 1,
        "gate": {"failed": gate.failed, "fail_on": sorted(v.value for v in gate.fail_on)},
        "comparisons": [asdict(c) for c in gate.comparisons],
        "explanations": {cid: [asdict(c) for c in rows] for cid, rows in gate.explanations.items()},
        "baseline_environment": asdict(gate.baseline_env) if gate.baseline_env else None,
        "environment": asdict(gate.current_env) if gate.current_env else None,
    }
    if run is not None:
        doc["run"] = {"run_id": run.run_id, **asdict(run.info)}
        doc["cases"] = [{"case_id": r.case_id, **asdict(r.timing), "samples_ms": list(r.samples_ms),
                         "bytes_moved": r.bytes_moved, "flops": r.flops,
                         "metrics": [asdict(m) for m in r.metrics], "profile_errors": list(r.profile_errors)}
                        for r in run.results]
    return _clean(doc)


def render_json(gate: GateResult, run: Run | None) -> str:
    return json.dumps(results_document(gate, run), indent=2, sort_keys=True) + "\n"
