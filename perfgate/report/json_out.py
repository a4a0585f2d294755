"""The JSON results file: every comparison, finding and case, for other tools to read. Strict JSON:
NaN and infinities are written as null (a change from 0 has no finite percentage).

Version 3: the timed samples of each case (`samples_ms`, and `reference_samples_ms` of a speedup) are
written only on request (`--perfgate-json-samples`): at 10,000 cases x 200 samples they were 59 MB of a
file read for its verdicts. `samples_included` says which kind of file this is; the history keeps
every sample either way."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import Any

from perfgate.codec import case_to_dict, finite_or_none
from perfgate.model import CaseResult, GateResult, Run

JSON_VERSION = 3


def results_document(gate: GateResult, run: Run | None, samples: bool = False) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "perfgate_json_version": JSON_VERSION,
        "samples_included": samples,
        "gate": {"failed": gate.failed, "strict": gate.strict, "calibrated": gate.calibrated,
                 "fail_on": sorted(v.value for v in gate.fail_on), "failure_reasons": list(gate.failure_reasons)},
        "comparisons": [asdict(c) for c in gate.comparisons],
        "findings": [{"kind": f.kind.value, "message": f.message, "case_id": f.case_id,
                      "fails_strict": f.fails_strict} for f in gate.findings],
        "explanations": {cid: [asdict(c) for c in rows] for cid, rows in gate.explanations.items()},
        "baseline_environment": asdict(gate.baseline_env) if gate.baseline_env else None,
        "environment": asdict(gate.current_env) if gate.current_env else None,
    }
    if run is not None:
        info = asdict(run.info)
        info["unmeasured"] = [{"nodeid": u.nodeid, "outcome": u.outcome.value, "reason": u.reason}
                              for u in run.info.unmeasured]
        doc["run"] = {"run_id": run.run_id, **info}
        doc["cases"] = [case_to_dict(r) if samples else _without_samples(r) for r in run.results]
    return finite_or_none(doc)  # type: ignore[no-any-return]


def _without_samples(r: CaseResult) -> dict[str, Any]:
    speedup = replace(r.speedup, reference_samples_ms=()) if r.speedup is not None else None
    out = case_to_dict(replace(r, samples_ms=(), speedup=speedup))
    del out["samples_ms"]
    if out.get("speedup"):
        del out["speedup"]["reference_samples_ms"]
    return out


def render_json(gate: GateResult, run: Run | None, samples: bool = False) -> str:
    return json.dumps(results_document(gate, run, samples), indent=2, sort_keys=True, allow_nan=False) + "\n"
