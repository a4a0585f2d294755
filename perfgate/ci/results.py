"""The results file (`--perfgate-json`, perfgate.json) as the CI commands read it: one checked reader for
`perfgate ci verdict` and `perfgate ci annotate`.

The file comes from a job that ran pull-request code, so it is data to verify, not a verdict to trust.
Refused, with one line naming the file (ReportFileError): a version this perfgate does not know; a
missing `gate`, or its `failed`/`strict` not booleans; a verdict or finding kind that is not perfgate's
(never silently dropped); a regressed or improved verdict whose change points the other way; a strict
gate that measured nothing yet passed; a verdict its own numbers rule out (perfgate/ci/recompute.py, exit
status 4); a number that cannot be (a negative median or current value, a change below
-100 % of a non-negative quantity, a negative threshold or noise, min > median > max); a measured case
without a verdict (a gate that compared nothing has not passed). The gate counts as failed when the file
says so or when any gated row's verdict is one it fails on, or a strict finding in strict mode (fail
closed, as the comment does).

What it cannot prove: that this run's perfgate wrote the file. `not_before` and `require_strict` catch a
stale file or a gate run without strict mode; a process that runs the PR's code can still write a
well-formed file (docs/robustness.md, strict mode).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from perfgate.ci.recompute import check_verdicts
from perfgate.errors import ReportFileError
from perfgate.inputs import load_json_file
from perfgate.model import Direction, FindingKind, Verdict
from perfgate.parse.invariants import has_control
from perfgate.report.json_out import JSON_VERSION

OLDEST_VERSION = 2  # version 2 differs from 3 only in writing samples always
DEFAULT_FAIL_ON = frozenset({Verdict.REGRESSED.value, Verdict.BELOW_TARGET.value})
MAX_PCT = 1e9  # a change of a billion percent is not a measurement
_VERDICTS = frozenset(v.value for v in Verdict)
_KINDS = frozenset(k.value for k in FindingKind)
_DIRECTIONS = frozenset(d.value for d in Direction)
_DIRECTED = frozenset({Verdict.REGRESSED.value, Verdict.IMPROVED.value})  # a direction their change must have
# comparison numbers -> the least they can be (None: any finite value)
_ROW_NUMBERS: dict[str, float | None] = {
    "current": 0.0,
    "baseline": 0.0,
    "change_pct": -100.0,
    "threshold_pct": 0.0,
    "noise_pct": 0.0,
    "ci_low_pct": None,
    "ci_high_pct": None,
    "score": None,
    "p_value": 0.0,
}
_TIMING = ("min_ms", "q1_ms", "median_ms", "mean_ms", "q3_ms", "max_ms", "stdev_ms")


@dataclass(frozen=True)
class CheckedResults:
    """A results file every field of which the CI commands use has been checked; `doc` is the document."""

    path: Path
    version: int
    failed: bool
    strict: bool
    started_at: datetime | None  # when the run started (run.started_at), None when the file has no run
    doc: dict[str, Any]


def read_checked_results(path: Path) -> CheckedResults:
    """The results file, checked (ReportFileError naming the file and the first problem otherwise)."""
    doc = load_json_file(path, ReportFileError)
    if not isinstance(doc, dict):
        raise ReportFileError(path, "not a perfgate results file (--perfgate-json): not an object")
    version = doc.get("perfgate_json_version")
    if type(version) is not int or not OLDEST_VERSION <= version <= JSON_VERSION:
        raise ReportFileError(
            path,
            f"perfgate_json_version {str(version)[:20]!r} is not one this perfgate reads "
            f"({OLDEST_VERSION} to {JSON_VERSION})",
        )
    gate = doc.get("gate")
    if not isinstance(gate, dict) or type(gate.get("failed")) is not bool or type(gate.get("strict")) is not bool:
        raise ReportFileError(path, 'no "gate" object with booleans "failed" and "strict": the gate never decided')
    fail_on = _fail_on(path, gate)
    rows, findings, cases = _checked_lists(path, doc)
    if gate["strict"] and not gate["failed"] and not rows and not any(c.get("timing") is not None for c in cases):
        raise ReportFileError(path, "a strict gate that measured no case says it passed: strict mode fails that run")
    check_verdicts(path, doc, gate["strict"])  # exit 4: a verdict its own numbers rule out
    failing = any(r["verdict"] in fail_on and r.get("gated") is not False for r in rows) or (
        gate["strict"] and any(f.get("fails_strict") is True for f in findings)
    )
    return CheckedResults(
        path=path,
        version=version,
        failed=gate["failed"] or failing,
        strict=gate["strict"],
        started_at=_started_at(path, doc.get("run")),
        doc=doc,
    )


def _checked_lists(
    path: Path, doc: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The comparisons, findings and cases, each row checked, in that order; every measured case has a verdict."""
    rows = _list(path, doc, "comparisons")
    for i, row in enumerate(rows):
        _check_row(path, i, row)
    findings = _list(path, doc, "findings")
    for i, f in enumerate(findings):
        _check_finding(path, i, f)
    cases = _list(path, doc, "cases")
    for i, case in enumerate(cases):
        _check_case(path, i, case)
    judged = {row["case_id"] for row in rows}
    unjudged = [c["case_id"] for c in cases if c.get("timing") is not None and c["case_id"] not in judged]
    if unjudged:
        raise ReportFileError(
            path,
            f"{len(unjudged)} measured case(s) have no verdict, first {unjudged[0][:120]!r}: "
            "a gate that compared nothing has not passed",
        )
    return rows, findings, cases


def _fail_on(path: Path, gate: dict[str, Any]) -> frozenset[str]:
    fail_on = gate.get("fail_on")
    if fail_on is None:
        return DEFAULT_FAIL_ON
    if not isinstance(fail_on, list) or not all(_one_of(v, _VERDICTS) for v in fail_on):
        raise ReportFileError(path, '"gate": "fail_on" must be a list of perfgate verdicts')
    return DEFAULT_FAIL_ON | frozenset(fail_on)  # a file cannot take regressions off the list


def _one_of(value: Any, allowed: frozenset[str]) -> bool:
    """A string of the closed set (a list or an object from the file is unhashable: never `in` a set)."""
    return isinstance(value, str) and value in allowed


def _list(path: Path, doc: dict[str, Any], key: str) -> list[dict[str, Any]]:
    rows = doc.get(key, [])
    if not isinstance(rows, list):
        raise ReportFileError(path, f'"{key}" must be a list')
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ReportFileError(path, f"{key}[{i}] must be an object")
    return rows


def _number(path: Path, where: str, key: str, value: Any, least: float | None) -> float | None:
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(value) or abs(value) > MAX_PCT * 1e6:
        raise ReportFileError(path, f'{where}: "{key}" must be a finite number or null, not {str(value)[:40]}')
    if least is not None and value < least:
        raise ReportFileError(path, f'{where}: "{key}" = {value:g} cannot be below {least:g}')
    return float(value)


def _check_row(path: Path, i: int, row: dict[str, Any]) -> None:
    where = f"comparisons[{i}]"
    if not isinstance(row.get("case_id"), str) or not isinstance(row.get("metric"), str):
        raise ReportFileError(path, f"{where} must have a string case_id and metric")
    _check_id(path, where, row["case_id"])
    if not _one_of(row.get("verdict"), _VERDICTS):
        raise ReportFileError(path, f"{where}: verdict {str(row.get('verdict'))[:40]!r} is not perfgate's")
    if row.get("direction") is not None and not _one_of(row["direction"], _DIRECTIONS):
        raise ReportFileError(path, f"{where}: direction {str(row['direction'])[:40]!r} is not perfgate's")
    if row.get("gated") is not None and type(row["gated"]) is not bool:
        raise ReportFileError(path, f'{where}: "gated" must be a boolean')
    values = {key: _number(path, where, key, row.get(key), least) for key, least in _ROW_NUMBERS.items()}
    change = values["change_pct"]
    if change is not None and change > MAX_PCT:
        raise ReportFileError(path, f'{where}: "change_pct" = {change:g} is not a measured change')
    if (values["p_value"] or 0.0) > 1:
        raise ReportFileError(path, f'{where}: "p_value" = {values["p_value"]:g} is not a probability')
    direction = row.get("direction")
    if change is not None and direction is not None and row["verdict"] in _DIRECTED and change != 0:
        worse = change > 0 if direction == Direction.LOWER.value else change < 0
        if worse != (row["verdict"] == Verdict.REGRESSED.value):
            raise ReportFileError(
                path,
                f"{where}: verdict {row['verdict']!r} with a change of {change:+g}% on a {direction} metric: "
                "the verdict contradicts its own numbers",
            )
    low, high = values["ci_low_pct"], values["ci_high_pct"]
    if low is not None and high is not None and low > high:
        raise ReportFileError(path, f"{where}: the change interval [{low:g}, {high:g}] % is reversed")


def _check_id(path: Path, where: str, case_id: str) -> None:
    if has_control(case_id):
        raise ReportFileError(path, f"{where}: case id {case_id[:80]!r} holds a control character")


def _check_finding(path: Path, i: int, f: dict[str, Any]) -> None:
    if not _one_of(f.get("kind"), _KINDS) or not isinstance(f.get("message"), str):
        raise ReportFileError(
            path, f"findings[{i}]: kind {str(f.get('kind'))[:40]!r} is not perfgate's, or the message is not a string"
        )
    if f.get("fails_strict") is not None and type(f["fails_strict"]) is not bool:
        raise ReportFileError(path, f'findings[{i}]: "fails_strict" must be a boolean')


def _check_case(path: Path, i: int, case: dict[str, Any]) -> None:
    where = f"cases[{i}]"
    if not isinstance(case.get("case_id"), str):
        raise ReportFileError(path, f"{where} must have a string case_id")
    _check_id(path, where, case["case_id"])
    timing = case.get("timing")
    if timing is None:
        return
    if not isinstance(timing, dict):
        raise ReportFileError(path, f'{where}: "timing" must be an object')
    stats = {key: _number(path, f"{where}.timing", key, timing.get(key), 0.0) for key in _TIMING}
    low, mid, high = stats["min_ms"], stats["median_ms"], stats["max_ms"]
    if mid is None:
        raise ReportFileError(path, f"{where}.timing has no median_ms")
    if (low is not None and low > mid) or (high is not None and mid > high):
        raise ReportFileError(path, f"{where}.timing: median_ms {mid:g} lies outside [min_ms, max_ms]")
    n = timing.get("n_samples")
    if n is not None and (type(n) is not int or n < 0):
        raise ReportFileError(path, f'{where}.timing: "n_samples" must be a non-negative integer')


def _started_at(path: Path, run: Any) -> datetime | None:
    if run is None:
        return None
    started = run.get("started_at") if isinstance(run, dict) else None
    try:
        when = datetime.fromisoformat(started) if isinstance(started, str) else None
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise ReportFileError(path, '"run": "started_at" must be an ISO 8601 time with a UTC offset')
    return when
