"""The JSON results file: every comparison, finding and case, for other tools to read. Strict JSON:
NaN and infinities are written as null (a change from 0 has no finite percentage).

Version 3: the timed samples of each case (`samples_ms`, and `reference_samples_ms` of a speedup) are
written only on request (`--perfgate-json-samples`): at 10,000 cases x 200 samples they were 59 MB of a
file read for its verdicts. `samples_included` says which kind of file this is; the history keeps
every sample either way. One comparison, finding or case per line (keys sorted), written by the C
encoder: a 10,000-case file takes a fraction of a second, not seconds of indenting.
"""

from __future__ import annotations

import enum
import functools
import json
import math
from dataclasses import fields, is_dataclass, replace
from typing import Any

from perfgate.model import CaseResult, GateResult, Run

JSON_VERSION = 3


def results_document(gate: GateResult, run: Run | None, samples: bool = False) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "perfgate_json_version": JSON_VERSION,
        "samples_included": samples,
        "gate": {
            "failed": gate.failed,
            "strict": gate.strict,
            "calibrated": gate.calibrated,
            "fail_on": sorted(v.value for v in gate.fail_on),
            "failure_reasons": list(gate.failure_reasons),
        },
        "comparisons": [plain(c) for c in gate.comparisons],
        "findings": [
            {"kind": f.kind.value, "message": f.message, "case_id": f.case_id, "fails_strict": f.fails_strict}
            for f in gate.findings
        ],
        "explanations": {cid: [plain(c) for c in rows] for cid, rows in gate.explanations.items()},
        "baseline_environment": plain(gate.baseline_env),
        "environment": plain(gate.current_env),
    }
    if run is not None:
        info = plain(run.info)
        doc["run"] = {"run_id": run.run_id, **info}
        doc["cases"] = [_case(r, samples) for r in run.results]
    return doc


def _case(r: CaseResult, samples: bool) -> dict[str, Any]:
    out: dict[str, Any] = plain(r) if samples else _without_samples(r)
    out["extra_info"] = plain(dict(r.extra_info))  # a mapping, as pytest-benchmark writes it (the record keeps pairs)
    if r.compiled is not None:  # as every other reader of it writes it (occupancy with its percentage)
        from perfgate.compiled.codec import to_dict

        out["compiled"] = to_dict(r.compiled)
    return out


def plain(value: object) -> Any:
    """Records as JSON values, as `dataclasses.asdict` and the codec would give them (enums as their
    values, tuples as lists) with NaN and infinities as None, in one pass without asdict's deep copies."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        return {name: plain(getattr(value, name)) for name in _field_names(type(value))}
    return value


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def _without_samples(r: CaseResult) -> dict[str, Any]:
    speedup = replace(r.speedup, reference_samples_ms=()) if r.speedup is not None else None
    out: dict[str, Any] = plain(replace(r, samples_ms=(), speedup=speedup))
    del out["samples_ms"]
    if out.get("speedup"):
        del out["speedup"]["reference_samples_ms"]
    return out


def render_json(gate: GateResult, run: Run | None, samples: bool = False) -> str:
    doc = results_document(gate, run, samples)
    parts = []
    for key in sorted(doc):
        value = doc[key]
        if isinstance(value, list) and value:
            rows = ",\n".join("    " + _dumps(v) for v in value)
            parts.append(f"  {_dumps(key)}: [\n{rows}\n  ]")
        else:
            parts.append(f"  {_dumps(key)}: {_dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)
