"""The terminal table: case, metric, baseline, current, change, verdict; then findings and the headline."""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.metrics import TIME_METRIC
from perfgate.model import Comparison, GateResult, Verdict
from perfgate.report.format import fmt_change, fmt_detects, fmt_value, metric_title, movement, shorten

HEADERS = ("case", "metric", "baseline", "current", "change", "detects", "verdict")
LOUD = (Verdict.REGRESSED, Verdict.BELOW_TARGET)


def table_rows(gate: GateResult) -> list[tuple[str, ...]]:
    """Time rows for every case; other rows only when they moved past their threshold or missed a target."""
    shown = [c for c in gate.comparisons if c.metric == TIME_METRIC or c.verdict is not Verdict.UNCHANGED]
    return [(shorten(c.case_id, 56), metric_title(c), fmt_value(c.baseline, c.unit), fmt_value(c.current, c.unit),
             fmt_change(c.change_pct), fmt_detects(c), _verdict_cell(c)) for c in shown]


def _verdict_cell(c: Comparison) -> str:
    text = c.verdict.value.upper() if c.verdict in LOUD else c.verdict.value
    if c.metric == TIME_METRIC and c.processes > 1:
        text += f" ({c.processes} processes)"
    return text


def render_table(rows: Sequence[tuple[str, ...]], headers: tuple[str, ...] = HEADERS) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) if i < 2 or i == len(cells) - 1 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(headers), line(tuple("-" * w for w in widths))] + [line(r) for r in rows]


def render_terminal(gate: GateResult) -> list[str]:
    lines = render_table(table_rows(gate)) if gate.comparisons else []
    for case_id, rows in gate.explanations.items():
        lines.append(f"why {shorten(case_id, 56)}: " + "; ".join(movement(r) for r in rows))
    for c in gate.comparisons:
        if c.verdict in (Verdict.NOT_COMPARABLE, Verdict.PROFILE_FAILED, Verdict.BELOW_TARGET) and c.note:
            lines.append(f"{c.verdict.value}: {shorten(c.case_id, 56)}: {c.note.splitlines()[0]}")
    for f in gate.findings:
        tag = "strict" if gate.strict and f.fails_strict else "warning" if f.fails_strict else "note"
        lines.append(f"perfgate {tag}: {f.kind.value}: {f.message}")
    lines.append(headline(gate))
    return lines


def headline(gate: GateResult) -> str:
    """One line: cases by time verdict, then metric regressions, failed profiles and strict failures."""
    time_rows = [c for c in gate.comparisons if c.metric == TIME_METRIC and c.verdict is not Verdict.PROFILE_FAILED]
    parts = [f"{n} {v.value}" for v in Verdict if (n := sum(c.verdict is v for c in time_rows))]
    metric_bad = sum(c.verdict is Verdict.REGRESSED for c in gate.comparisons if c.metric != TIME_METRIC)
    if metric_bad:
        parts.append(f"{metric_bad} other metric(s) regressed")
    below = len(gate.by_verdict(Verdict.BELOW_TARGET))
    if below:
        parts.append(f"{below} speedup(s) below target")
    failed_profiles = len(gate.by_verdict(Verdict.PROFILE_FAILED))
    if failed_profiles:
        parts.append(f"{failed_profiles} profile(s) failed")
    strict = [f for f in gate.findings if f.fails_strict]
    if strict and gate.strict:
        parts.append(f"{len(strict)} strict-mode failure(s)")
    status = "FAILED" if gate.failed else "passed"
    return f"perfgate: gate {status}: {len(time_rows)} case(s): " + (", ".join(parts) if parts else "nothing compared")
