"""The terminal table: case, metric, baseline, current, change, verdict."""

from __future__ import annotations

from perfgate.metrics import TIME_METRIC
from perfgate.model import Comparison, GateResult, Verdict
from perfgate.report.quantity import fmt_change, fmt_value, metric_title, movement, shorten

HEADERS = ("case", "metric", "baseline", "current", "change", "verdict")


def table_rows(gate: GateResult) -> list[tuple[str, ...]]:
    """Time rows for every case; profiler rows only when they moved past their threshold."""
    shown = [c for c in gate.comparisons if c.metric == TIME_METRIC or c.verdict is not Verdict.UNCHANGED]
    return [(shorten(c.case_id, 56), metric_title(c), fmt_value(c.baseline, c.unit), fmt_value(c.current, c.unit),
             fmt_change(c.change_pct), _verdict_cell(c)) for c in shown]


def _verdict_cell(c: Comparison) -> str:
    return c.verdict.value.upper() if c.verdict is Verdict.REGRESSED else c.verdict.value


def render_table(rows: list[tuple[str, ...]], headers: tuple[str, ...] = HEADERS) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [line(headers), line(tuple("-" * w for w in widths))] + [line(r) for r in rows]


def render_terminal(gate: GateResult) -> list[str]:
    lines = render_table(table_rows(gate))
    for case_id, rows in gate.explanations.items():
        lines.append(f"why {shorten(case_id, 56)}: " + "; ".join(movement(r) for r in rows))
    for c in gate.comparisons:
        if c.verdict in (Verdict.NOT_COMPARABLE, Verdict.PROFILE_FAILED) and c.note:
            lines.append(f"{c.verdict.value}: {shorten(c.case_id, 56)}: {c.note.splitlines()[0]}")
    lines.append(headline(gate))
    return lines


def headline(gate: GateResult) -> str:
    """One line: cases by time verdict, then profiler-metric regressions and failures."""
    time_rows = [c for c in gate.comparisons if c.metric == TIME_METRIC and c.verdict is not Verdict.PROFILE_FAILED]
    parts = [f"{n} {v.value}" for v in Verdict if (n := sum(c.verdict is v for c in time_rows))]
    metric_bad = sum(c.verdict is Verdict.REGRESSED for c in gate.comparisons if c.metric != TIME_METRIC)
    if metric_bad:
        parts.append(f"{metric_bad} profiler metric(s) regressed")
    failed_profiles = len(gate.by_verdict(Verdict.PROFILE_FAILED))
    if failed_profiles:
        parts.append(f"{failed_profiles} profile(s) failed")
    status = "FAILED" if gate.failed else "passed"
    return f"perfgate: gate {status}: {len(time_rows)} case(s): " + (", ".join(parts) if parts else "nothing compared")
