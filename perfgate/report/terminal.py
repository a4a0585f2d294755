"""The terminal report: the rows that fail the gate, the other changed rows (capped), counts of the rest,
findings, and the headline. `full` lists every row instead (`--perfgate-full-table`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from perfgate.metrics import CYCLES_METRIC, STATIC_PREFIX, TIME_METRIC
from perfgate.model import Comparison, Finding, FindingKind, GateResult, Verdict
from perfgate.report.format import (
    distinct_short,
    fmt_change,
    fmt_detects,
    fmt_value,
    fmt_verdict,
    metric_title,
    why_line,
)

HEADERS = ("case", "metric", "baseline", "current", "change", "detects", "verdict")
LOUD = (Verdict.REGRESSED, Verdict.BELOW_TARGET)
CHANGED = (
    Verdict.REGRESSED,
    Verdict.BELOW_TARGET,
    Verdict.INCONCLUSIVE,
    Verdict.IMPROVED,
    Verdict.NOT_COMPARABLE,
    Verdict.PROFILE_FAILED,
)
TOP_N = 30  # listed rows (and notes) beyond the failing ones
ID_WIDTH = 56


def _shown(gate: GateResult, full: bool, top_n: int) -> tuple[list[Comparison], int]:
    """(rows to list, changed rows left out)."""
    if full:
        return [c for c in gate.comparisons if c.metric == TIME_METRIC or c.verdict is not Verdict.UNCHANGED], 0
    failing = sorted((c for c in gate.comparisons if c.verdict in gate.fail_on), key=_severity)
    other = sorted(
        (c for c in gate.comparisons if c.verdict in CHANGED and c.verdict not in gate.fail_on), key=_severity
    )
    return failing + other[:top_n], max(0, len(other) - top_n)


def _severity(c: Comparison) -> tuple[int, float]:
    return CHANGED.index(c.verdict) if c.verdict in CHANGED else len(CHANGED), -abs(c.change_pct or 0.0)


def _labels(gate: GateResult) -> dict[str, str]:
    return distinct_short((c.case_id for c in gate.comparisons), ID_WIDTH)


def _cells(c: Comparison, labels: Mapping[str, str]) -> tuple[str, ...]:
    return (
        labels[c.case_id],
        metric_title(c),
        fmt_value(c.baseline, c.unit),
        fmt_value(c.current, c.unit),
        fmt_change(c.change_pct),
        fmt_detects(c),
        _verdict_cell(c),
    )


def _verdict_cell(c: Comparison) -> str:
    return fmt_verdict(c, loud=c.verdict in LOUD and c.gated)


def render_table(rows: Sequence[tuple[str, ...]], headers: tuple[str, ...] = HEADERS) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.ljust(w) if i < 2 or i == len(cells) - 1 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    return [line(headers), line(tuple("-" * w for w in widths))] + [line(r) for r in rows]


def render_terminal(gate: GateResult, full: bool = False, top_n: int = TOP_N) -> list[str]:
    labels = _labels(gate)
    shown, hidden = _shown(gate, full, top_n)
    lines = render_table([_cells(c, labels) for c in shown]) if shown else []
    if not full:
        lines += _counts(gate, hidden)
    for case_id, rows in gate.explanations.items():
        lines.append(f"why {labels.get(case_id, case_id)}: {why_line(rows)}")
    notes = [
        c
        for c in gate.comparisons
        if c.note
        and (
            c.verdict in (Verdict.NOT_COMPARABLE, Verdict.PROFILE_FAILED, Verdict.BELOW_TARGET)
            or (c.metric.startswith(STATIC_PREFIX) and c.verdict is not Verdict.UNCHANGED)
        )
    ]
    notes.sort(key=lambda c: c.verdict not in gate.fail_on)
    limit = len(notes) if full else max(top_n, sum(c.verdict in gate.fail_on for c in notes))
    lines += [f"{_note_head(c)}: {labels.get(c.case_id, c.case_id)}: {c.note.splitlines()[0]}" for c in notes[:limit]]
    if len(notes) > limit:
        lines.append(f"perfgate: … and {len(notes) - limit:,} more note(s) (--perfgate-full-table lists them)")
    lines += _findings(gate, full, top_n)
    lines += cycles_line(gate, labels)
    lines.append(headline(gate))
    return lines


CYCLES_NAMED = 3


def cycles_line(gate: GateResult, labels: Mapping[str, str]) -> list[str]:
    """Which cases were gated in SM cycles rather than time, and why (one line, a few named)."""
    rows = [c for c in gate.comparisons if c.metric == CYCLES_METRIC and c.gated]
    if not rows:
        return []
    named = "; ".join(f"{labels.get(c.case_id, c.case_id)}: {c.note.split('; ')[0]}" for c in rows[:CYCLES_NAMED])
    more = f"; and {len(rows) - CYCLES_NAMED} more" if len(rows) > CYCLES_NAMED else ""
    return [f"perfgate: gated in SM cycles (time x the clock each sample ran at): {len(rows)} case(s): {named}{more}"]


def _note_head(c: Comparison) -> str:
    """`regressed (static, _matmul_kernel)` for the static gate's rows: which kernel, and that no timing said it."""
    if c.metric.startswith(STATIC_PREFIX):
        return f"{c.verdict.value} (static{', ' + c.kernel if c.kernel else ''})"
    return c.verdict.value


def _counts(gate: GateResult, hidden: int) -> list[str]:
    """One line for what the table leaves out: unchanged, new and missing rows, and changed rows past the cap."""
    rest = Counter(
        c.verdict.value for c in gate.comparisons if c.verdict not in CHANGED and c.verdict not in gate.fail_on
    )
    parts = [f"{hidden:,} more changed"] if hidden else []
    parts += [f"{n:,} {verdict}" for verdict, n in rest.most_common()]
    if not parts:
        return []
    return [f"not listed: {', '.join(parts)} row(s) (--perfgate-full-table lists every row)"]


def _findings(gate: GateResult, full: bool, top_n: int) -> list[str]:
    """Strict failures all; warnings and notes up to `top_n`, then counted by kind."""
    failing = [f for f in gate.findings if gate.strict and f.fails_strict]
    others = sorted(
        (f for f in gate.findings if not (gate.strict and f.fails_strict)), key=lambda f: not f.fails_strict
    )
    shown = failing + (others if full else others[:top_n])
    lines = [f"perfgate {_tag(f, gate.strict)}: {f.kind.value}: {f.message}" for f in shown]
    hidden = Counter(f.kind.value for f in others[len(shown) - len(failing) :])
    if hidden:
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in hidden.most_common())
        lines.append(
            f"perfgate: … and {sum(hidden.values()):,} more finding(s): {kinds} "
            f"(every one is in --perfgate-json and the summary's counts)"
        )
    return lines


def _tag(f: Finding, strict: bool) -> str:
    return "strict" if strict and f.fails_strict else "warning" if f.fails_strict else "note"


def headline(gate: GateResult) -> str:
    """One line: cases by time verdict (by cycles where those are gated), then metric regressions, failed profiles
    and strict failures."""
    time_rows = [c for c in gate.comparisons if c.metric == TIME_METRIC and c.verdict is not Verdict.PROFILE_FAILED]
    on_cycles = {c.case_id: c for c in gate.comparisons if c.metric == CYCLES_METRIC and c.gated}
    case_rows = [on_cycles.get(c.case_id, c) for c in time_rows]
    counts = Counter(c.verdict for c in case_rows)
    parts = [f"{counts[v]} {v.value}" for v in Verdict if counts[v]]
    metric_bad = sum(
        c.verdict is Verdict.REGRESSED for c in gate.comparisons if c.metric not in (TIME_METRIC, CYCLES_METRIC)
    )
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
    if not gate.failed and not gate.comparisons and any(f.kind is FindingKind.NO_CASES for f in gate.findings):
        return "perfgate: nothing measured: no gate ran (--perfgate-strict fails such a run)"
    status = "FAILED" if gate.failed else "passed"
    return f"perfgate: gate {status}: {len(time_rows)} case(s): " + (", ".join(parts) if parts else "nothing compared")
