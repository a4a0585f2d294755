"""The Markdown summary: sized for a GitHub job summary or PR comment."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from perfgate.metrics import CYCLES_METRIC, GROUPS, MetricGroup, columns
from perfgate.model import Comparison, Environment, Finding, GateResult, Run, Verdict
from perfgate.report.compiled import compiled_section
from perfgate.report.format import (
    case_label,
    distinct_short,
    fmt_change,
    fmt_ci,
    fmt_detects,
    fmt_value,
    fmt_verdict,
    kernel_label,
    metric_title,
    movement,
    shorten,
)
from perfgate.report.terminal import headline

ICON = {
    Verdict.REGRESSED: "🔴",
    Verdict.IMPROVED: "🟢",
    Verdict.UNCHANGED: "⚪",
    Verdict.INCONCLUSIVE: "🟡",
    Verdict.BELOW_TARGET: "🔴",
    Verdict.NEW: "🆕",
    Verdict.MISSING: "❔",
    Verdict.NOT_COMPARABLE: "⛔",
    Verdict.PROFILE_FAILED: "⚠️",
}
CHANGED = (Verdict.REGRESSED, Verdict.BELOW_TARGET, Verdict.INCONCLUSIVE, Verdict.IMPROVED)
_ENV_FIELDS = (
    "device_name",
    "compute_capability",
    "driver_version",
    "cuda_version",
    "torch_version",
    "triton_version",
    "python_version",
    "perfgate_version",
)


@dataclass(frozen=True)
class ChartLink:
    name: str
    href: str  # "" when there is nowhere to link to (a job summary without a chart URL)


def render_markdown(gate: GateResult, charts: Sequence[ChartLink] = (), top_n: int = 50, run: Run | None = None) -> str:
    """Headline; what fails the gate (every row, largest change first); strict failures; why; then what
    else needs attention, changed cases, speedups, profiler metrics, everything else collapsed, GPU state,
    environments, charts. Every list but the failing ones stops at `top_n` with "… and N more", so the
    size follows what failed, not the suite (markdown_fit.py cuts to a limit at these sections).
    One pass over the comparisons per section: linear in cases."""
    failing = sorted((c for c in gate.comparisons if c.verdict in gate.fail_on), key=_severity)
    changed = sorted(
        (c for c in gate.comparisons if c.verdict in CHANGED and c.verdict not in gate.fail_on), key=_severity
    )
    rest = [c for c in gate.comparisons if c.verdict not in CHANGED and c.verdict not in gate.fail_on]
    labels = distinct_short((c.case_id for c in gate.comparisons), 70)
    out = [f"## {'❌' if gate.failed else '✅'} {_escape(headline(gate))}", ""]
    if failing:
        out += [f"### ❌ Failing ({len(failing)})", ""] + _table(failing, len(failing), labels) + [""]
    strict, notes = _split_findings(gate)
    if strict:
        out += [f"### ❌ Strict-mode failures ({len(strict)})", ""] + [_finding_line(f, gate.strict) for f in strict]
        out.append("")
    if gate.explanations:
        out += ["### Why (what changed with the regressed cases: compiled kernels, profiler metrics)", ""]
        out += [
            f"- `{_code(shorten(cid, 80))}`: " + "; ".join(_escape(movement(r)) for r in rows)
            for cid, rows in gate.explanations.items()
        ] + [""]
    out += _attention(notes, gate.strict, top_n)
    if changed:
        out += [f"### Changed ({len(changed)})", ""] + _table(changed, top_n, labels) + [""]
    out += _on_cycles(gate, top_n)
    out += _speedups(run, top_n) + compiled_section(run.results if run else (), top_n, _escape, _code)
    out += _metric_tables(run, top_n)
    problems = [c for c in rest if c.verdict in (Verdict.NOT_COMPARABLE, Verdict.PROFILE_FAILED) and c.note]
    if problems:
        out += ["### Could not compare", ""]
        out += (
            [
                f"- {ICON[c.verdict]} `{_code(shorten(c.case_id, 80))}`: {_escape(c.note.splitlines()[0])}"
                for c in problems[:top_n]
            ]
            + _more_item(len(problems) - top_n)
            + [""]
        )
    if rest:
        out += [f"<details><summary>All other results ({len(rest)})</summary>", ""] + _table(rest, top_n, labels)
        out += ["", "</details>", ""]
    out += _gpu_state(run, top_n) + _environment(gate.baseline_env, gate.current_env)
    if charts:
        out += ["### Charts", ""]
        out += [
            f"- [{_escape(c.name)}]({c.href})" if c.href else f"- {_escape(c.name)} (in the results artifact)"
            for c in charts
        ] + [""]
    return "\n".join(out).rstrip() + "\n"


def _severity(c: Comparison) -> tuple[int, float]:
    """Failing verdicts first, then by how far the case moved."""
    rank = CHANGED.index(c.verdict) if c.verdict in CHANGED else len(CHANGED)
    return rank, -abs(c.change_pct or 0.0)


def _split_findings(gate: GateResult) -> tuple[list[Finding], list[Finding]]:
    """(findings that fail this strict gate, the others with strict-mode kinds first)."""
    if gate.strict:
        return [f for f in gate.findings if f.fails_strict], [f for f in gate.findings if not f.fails_strict]
    return [], sorted(gate.findings, key=lambda f: not f.fails_strict)


def _attention(findings: Sequence[Finding], strict: bool, top_n: int) -> list[str]:
    """Warnings: what a green (or red) gate did not check; the first `top_n`, then counts by kind."""
    if not findings:
        return []
    out = [f"### Needs attention ({len(findings)})", ""] + [_finding_line(f, strict) for f in findings[:top_n]]
    hidden = Counter(f.kind.value for f in findings[top_n:])
    if hidden:
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in hidden.most_common())
        out.append(f"- … and {sum(hidden.values()):,} more ({kinds})")
    return out + [""]


def _finding_line(f: Finding, strict: bool) -> str:
    return f"- {_finding_icon(f, strict)} **{f.kind.value}**: {_escape(f.message)}"


def _finding_icon(f: Finding, strict: bool) -> str:
    if f.fails_strict:
        return "❌" if strict else "⚠️"
    return "ℹ️"


def _more_item(hidden: int) -> list[str]:
    return [f"- … and {hidden:,} more"] if hidden > 0 else []


def _more_row(hidden: int, columns: int) -> list[str]:
    return [f"| … and {hidden:,} more |" + " |" * (columns - 1)] if hidden > 0 else []


def _table(rows: Sequence[Comparison], top_n: int, labels: Mapping[str, str]) -> list[str]:
    lines = [
        "| case | metric | baseline | current | change (95% CI) | detects | verdict |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for c in rows[:top_n]:
        change = f"{fmt_change(c.change_pct)} {fmt_ci(c)}".strip()
        verdict = f"{ICON[c.verdict]} {fmt_verdict(c)}"
        lines.append(
            f"| `{_code(labels.get(c.case_id) or shorten(c.case_id, 70))}` | {_escape(metric_title(c))} | "
            f"{fmt_value(c.baseline, c.unit)} | {fmt_value(c.current, c.unit)} | {change} | "
            f"{fmt_detects(c)} | {verdict} |"
        )
    return lines + _more_row(len(rows) - top_n, 7)


def _on_cycles(gate: GateResult, top_n: int) -> list[str]:
    """The cases gated in SM cycles (compute-bound: the power cap moves their time, not their cycles), and why."""
    rows = [c for c in gate.comparisons if c.metric == CYCLES_METRIC and c.gated]
    if not rows:
        return []
    out = [f"### Gated in SM cycles ({len(rows)}): time x the SM clock each sample ran at", ""]
    out += [f"- `{_code(shorten(c.case_id, 80))}`: {_escape(c.note)}" for c in rows[:top_n]]
    return out + _more_item(len(rows) - top_n) + [""]


def _speedups(run: Run | None, top_n: int) -> list[str]:
    cases = [r for r in (run.results if run else ()) if r.speedup is not None]
    if not cases:
        return []
    out = [
        "### Speedup against the reference (timed alternately, same inputs)",
        "",
        "| case | speedup | target |",
        "|---|---:|---:|",
    ]
    for r in cases[:top_n]:
        s = r.speedup
        assert s is not None
        target = f"≥ {r.thresholds.min_speedup:g}x" if r.thresholds.min_speedup else "-"
        out.append(
            f"| `{_code(shorten(r.case_id, 70))}` | {s.median:.2f}x vs {_escape(s.reference)} "
            f"(CI {s.ci_low:.2f}-{s.ci_high:.2f}) | {target} |"
        )
    return out + _more_row(len(cases) - top_n, 3) + [""]


def _metric_tables(run: Run | None, top_n: int) -> list[str]:
    """One table per group of the metric catalogue (metrics.py), its columns the group's metrics, whichever
    profiler measured them; then the profilers' notes on cases they rightly had nothing on."""
    if run is None:
        return []
    out = [line for group in GROUPS for line in _group_table(run, group, top_n)]
    notes = [(r.case_id, n) for r in run.results for n in r.profile_notes]
    if notes:
        out += ["### Profiler notes", ""]
        out += [f"- ℹ️ `{_code(shorten(cid, 80))}`: {_escape(note)}" for cid, note in notes[:top_n]]
        out += _more_item(len(notes) - top_n) + [""]
    return out


def _group_table(run: Run, group: MetricGroup, top_n: int) -> list[str]:
    """This run's values of the group's metrics: a row per case (and kernel, for a per-kernel group) with
    at least one of them non-zero; the title names the sources that measured them."""
    cols = columns(group)
    names = {name for name, _ in cols}
    rows: dict[tuple[str, str], dict[str, float]] = {}
    sources: set[str] = set()
    for res in run.results:
        for m in res.metrics:
            if m.name in names and (group.per_kernel or not m.kernel):
                rows.setdefault((res.case_id, m.kernel if group.per_kernel else ""), {})[m.name] = m.value
                sources.add(m.source)
    shown = sorted(key for key, values in rows.items() if any(values.values()))
    if not shown:
        return []
    head = ["| case | kernel |" if group.per_kernel else "| case |", "|---|---|" if group.per_kernel else "|---|"]
    out = [
        f"### {group.title} ({_escape(', '.join(sorted(sources)))})",
        "",
        head[0] + " " + " | ".join(_escape(spec.header) for _, spec in cols) + " |",
        head[1] + "---:|" * len(cols),
    ]
    for case_id, kernel in shown[:top_n]:
        cells = [fmt_value(rows[(case_id, kernel)].get(name), spec.unit) for name, spec in cols]
        kernel_cell = f"`{_code(kernel_label(kernel, 40))}` | " if group.per_kernel else ""
        out.append(f"| `{_code(case_label(case_id, 50))}` | {kernel_cell}" + " | ".join(cells) + " |")
    return out + _more_row(len(shown) - top_n, len(cols) + (2 if group.per_kernel else 1)) + [""]


def _gpu_state(run: Run | None, top_n: int) -> list[str]:
    cases = [r for r in (run.results if run else ()) if r.gpu_state is not None]
    if not cases:
        return []
    out = [
        f"<details><summary>GPU state while sampling ({len(cases)} case(s))</summary>",
        "",
        "| case | SM clock (min) | power | temperature | throttled | waited | dropped samples | autotune |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in cases[:top_n]:
        g = r.gpu_state
        assert g is not None
        clock = f"{fmt_value(g.sm_clock_mhz, '')} ({fmt_value(g.sm_clock_min_mhz, '')}) MHz"
        locked = " 🔒" if g.clocks_locked else ""
        tuned = "; ".join(f"{k}: {v}" for k, v in r.autotune) or "-"
        out.append(
            f"| `{_code(shorten(r.case_id, 60))}` | {clock}{locked} | {fmt_value(g.power_median_w, '')} W | "
            f"{fmt_value(g.temperature_max_c, '')} °C | {100 * g.throttled_fraction:.0f}% "
            f"(0x{g.throttle_reasons:x}) | {g.cooldown_ms:.0f} ms | {g.excluded_samples} | "
            f"{_escape(shorten(tuned, 80))} |"
        )
    return out + _more_row(len(cases) - top_n, 8) + ["", "</details>", ""]


def _environment(base: Environment | None, cur: Environment | None) -> list[str]:
    if cur is None:
        return []
    lines = ["<details><summary>Environment</summary>", "", "| | baseline | this run |", "|---|---|---|"]
    b = asdict(base) if base else {}
    c = asdict(cur)
    for name in _ENV_FIELDS:
        mark = " ⚠️" if base and b.get(name) != c.get(name) else ""
        lines.append(f"| {name} | {_escape(str(b.get(name, '-')) or '-')} | {_escape(str(c.get(name)) or '-')}{mark} |")
    return lines + ["", "</details>", ""]


def _escape(text: str) -> str:
    """Pipes would split table cells, a line break would end the row; angle brackets would open HTML tags
    on GitHub, `](` a link or an image. (The PR comment is rendered apart, by report/comment.py, with every
    string from the results as code.)"""
    return (
        " ".join(text.splitlines()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("](", "]\\(")
    )


def _code(text: str) -> str:
    # inside backticks only the pipe needs care in a table; backticks themselves would end the span, and a
    # line break the row
    return " ".join(text.splitlines()).replace("|", "\\|").replace("`", "'")
