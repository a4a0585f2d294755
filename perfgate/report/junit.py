"""The verdicts as JUnit XML, which CI systems (GitLab, Jenkins, Azure, GitHub test reporters) display natively.

One <testcase> per case: classname and name from the case id (`dir/test_x.py::test_y[p]` -> `dir.test_x`,
`test_y[p]`), time = the case's time in seconds (the mean of its process medians, as the gate shows it). A
case fails (<failure>) when a gated comparison has a verdict the gate fails on, with each change and
threshold in the message; it is skipped (<skipped>) when any gated comparison was not decided (new, missing
from this run, not comparable, inconclusive), each named in the message; otherwise (every gated metric
decided) it passed. Strict-mode findings that fail the gate fail their case, or a testcase of their own when
they name none. Every number is a <property>. Text is escaped by xml.etree; characters XML 1.0 cannot hold
at all (control characters, lone surrogates) are replaced, so any case name gives a well-formed file.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.metrics import TIME_METRIC
from perfgate.model import Comparison, Finding, GateResult, Run, Verdict

UNDECIDED = frozenset({Verdict.NEW, Verdict.MISSING, Verdict.NOT_COMPARABLE, Verdict.INCONCLUSIVE})
SUITE_NAME = "perfgate"
# what XML 1.0 forbids: C0 controls but tab, line feed and carriage return; surrogates; U+FFFE and U+FFFF
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class _Case:
    case_id: str
    rows: tuple[Comparison, ...]
    findings: tuple[Finding, ...]
    median_s: float | None


def xml_text(text: str) -> str:
    """`text` with every character XML 1.0 cannot represent replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def junit_names(case_id: str) -> tuple[str, str]:
    """(classname, name) as pytest's own JUnit report spells them; parameters stay whole in the name."""
    head, bracket, params = case_id.partition("[")
    parts = head.split("::")
    if len(parts) < 2:
        return SUITE_NAME, case_id
    module = parts[0].removesuffix(".py").replace("/", ".").replace("\\", ".")
    return ".".join([module, *parts[1:-1]]), parts[-1] + bracket + params


def render_junit(gate: GateResult, run: Run | None = None) -> str:
    """One <testsuite> of the run's cases (every case that has a comparison, in the gate's order)."""
    cases = _cases(gate, run)
    elements = [_testcase(c, gate) for c in cases]
    suite = ET.Element(
        "testsuite",
        _attrs(
            name=SUITE_NAME,
            tests=len(elements),
            errors=0,
            failures=sum(e.find("failure") is not None for e in elements),
            skipped=sum(e.find("skipped") is not None for e in elements),
            time=_seconds(sum(c.median_s or 0.0 for c in cases)),
        ),
    )
    if run is not None and run.info.started_at:
        suite.set("timestamp", xml_text(run.info.started_at))
    suite.extend(elements)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _cases(gate: GateResult, run: Run | None) -> list[_Case]:
    rows: dict[str, list[Comparison]] = {}
    for c in gate.comparisons:
        rows.setdefault(c.case_id, []).append(c)
    failing = [f for f in gate.findings if f.fails_strict] if gate.strict else []
    found: dict[str, list[Finding]] = {}
    for f in failing:
        found.setdefault(f.case_id if f.case_id in rows else "", []).append(f)
    medians = {r.case_id: r.time_ms / 1e3 for r in run.results} if run is not None else {}
    out = [
        _Case(cid, tuple(rs), tuple(found.get(cid, ())), medians.get(cid, _time_row_s(rs))) for cid, rs in rows.items()
    ]
    return out + [_Case(f"{SUITE_NAME}::strict::{f.kind.value}", (), (f,), None) for f in found.get("", [])]


def _time_row_s(rows: Sequence[Comparison]) -> float | None:
    times = [c.current for c in rows if c.metric == TIME_METRIC and c.current is not None]
    return times[0] / 1e3 if times else None


def _testcase(case: _Case, gate: GateResult) -> ET.Element:
    classname, name = junit_names(case.case_id)
    el = ET.Element("testcase", _attrs(classname=classname, name=name))
    if case.median_s is not None:
        el.set("time", _seconds(case.median_s))
    failed = [c for c in case.rows if c.gated and c.verdict in gate.fail_on]
    if failed or case.findings:
        lines = [_row_line(c) for c in failed] + [f"strict: {f.kind.value}: {f.message}" for f in case.findings]
        failure = ET.SubElement(
            el, "failure", _attrs(message=lines[0], type=(failed[0].verdict.value if failed else "strict"))
        )
        failure.text = xml_text("\n".join(lines))
    elif undecided := [c for c in case.rows if c.gated and c.verdict in UNDECIDED]:
        # passed means every gated metric was decided: an inconclusive time is no pass because memory was fine
        ET.SubElement(el, "skipped", _attrs(message="; ".join(_row_line(c) for c in undecided)))
    if case.rows:
        el.append(_properties(case.rows))
    return el


def _row_line(c: Comparison) -> str:
    """`median_ms [kernel] regressed: +12.3% (threshold 3%; 0.100 -> 0.112 ms): note`"""
    what = f"{c.metric} [{c.kernel}]" if c.kernel else c.metric
    numbers = []
    if c.change_pct is not None:
        numbers.append(f"{c.change_pct:+.2f}%")
    if c.threshold_pct is not None:
        numbers.append(f"threshold {c.threshold_pct:g}%")
    if c.baseline is not None and c.current is not None:
        numbers.append(f"{c.baseline:g} -> {c.current:g} {c.unit}".rstrip())
    text = f"{what} {c.verdict.value}" + (f": {'; '.join(numbers)}" if numbers else "")
    return text + (f" ({c.note.splitlines()[0]})" if c.note.strip() else "")


def _properties(rows: Sequence[Comparison]) -> ET.Element:
    props = ET.Element("properties")
    for c in rows:
        key = f"{c.metric}[{c.kernel}]" if c.kernel else c.metric
        values: list[tuple[str, object]] = [
            ("verdict", c.verdict.value),
            ("baseline", c.baseline),
            ("current", c.current),
            ("unit", c.unit or None),
            ("change_pct", c.change_pct),
            ("threshold_pct", c.threshold_pct),
            ("noise_pct", c.noise_pct),
            ("processes", c.processes),
        ]
        for field, value in values:
            if value is not None:
                ET.SubElement(props, "property", _attrs(name=f"{key}.{field}", value=value))
    return props


def _attrs(**values: object) -> dict[str, str]:
    return {k: xml_text(v if isinstance(v, str) else repr(v)) for k, v in values.items()}


def _seconds(value: float) -> str:
    return f"{value:.9f}".rstrip("0").rstrip(".") or "0"
