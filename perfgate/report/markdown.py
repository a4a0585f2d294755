"""The Markdown summary: sized for a GitHub job summary or PR comment."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from perfgate.metrics import TIME_METRIC
from perfgate.model import Comparison, Environment, Finding, GateResult, Run, Verdict
from perfgate.report.format import (
    case_label,
    fmt_change,
    fmt_ci,
    fmt_detects,
    fmt_value,
    kernel_label,
    metric_title,
    movement,
    shorten,
)
from perfgate.report.terminal import headline

ICON = {Verdict.REGRESSED: "🔴", Verdict.IMPROVED: "🟢", Verdict.UNCHANGED: "⚪", Verdict.INCONCLUSIVE: "🟡",
        Verdict.BELOW_TARGET: "🔴", Verdict.NEW: "🆕", Verdict.MISSING: "❔", Verdict.NOT_COMPARABLE: "⛔",
        Verdict.PROFILE_FAILED: "⚠️"}
CHANGED = (Verdict.REGRESSED, Verdict.BELOW_TARGET, Verdict.INCONCLUSIVE, Verdict.IMPROVED)
_ENV_FIELDS = ("device_name", "compute_capability", "driver_version", "cuda_version", "torch_version",
               "triton_version", "python_version", "perfgate_version")


@dataclass(frozen=True)
class ChartLink:
    name: str
    href: str  # "" when there is nowhere to link to (a job summary without a chart URL)


def render_markdown(gate: GateResult, charts: Sequence[ChartLink] = (), top_n: int = 50, run: Run | None = None) -> str:
    """Headline, what needs attention, changed cases first, explanations, speedups, profiler metrics per
    kernel, everything else collapsed, GPU state, environments, charts."""
    changed = [c for c in gate.comparisons if c.verdict in CHANGED]
    changed.sort(key=lambda c: (CHANGED.index(c.verdict), -abs(c.change_pct or 0)))
    rest = [c for c in gate.comparisons if c not in changed]
    out = [f"## {'❌' if gate.failed else '✅'} {_escape(headline(gate))}", ""]
    out += _attention(gate)
    if changed:
        out += ["### Changed", ""] + _table(changed, top_n) + [""]
    if gate.explanations:
        out += ["### Why (profiler metrics of the regressed cases)", ""]
        out += [f"- `{_code(shorten(cid, 80))}`: " + "; ".join(_escape(movement(r)) for r in rows)
                for cid, rows in gate.explanations.items()] + [""]
    out += _speedups(run, top_n) + _profile_table(run, top_n) + _transfers(run, top_n)
    problems = [c for c in rest if c.verdict in (Verdict.NOT_COMPARABLE, Verdict.PROFILE_FAILED) and c.note]
    if problems:
        out += ["### Could not compare", ""]
        out += [f"- {ICON[c.verdict]} `{_code(shorten(c.case_id, 80))}`: {_escape(c.note.splitlines()[0])}"
                for c in problems[:top_n]] + [""]
    if rest:
        out += [f"<details><summary>All other results ({len(rest)})</summary>", ""] + _table(rest, top_n)
        out += ["", "</details>", ""]
    out += _gpu_state(run, top_n) + _environment(gate.baseline_env, gate.current_env)
    if charts:
        out += ["### Charts", ""]
        out += [f"- [{_escape(c.name)}]({c.href})" if c.href else f"- {_escape(c.name)} (in the results artifact)"
                for c in charts] + [""]
    return "\n".join(out).rstrip() + "\n"


def _attention(gate: GateResult) -> list[str]:
    """Strict-mode failures and warnings: what a green (or red) gate did not check."""
    findings = list(gate.findings)
    if not findings:
        return []
    out = ["### Needs attention", ""]
    for f in findings:
        out.append(f"- {_finding_icon(f, gate.strict)} **{f.kind.value}**: {_escape(f.message)}")
    return out + [""]


def _finding_icon(f: Finding, strict: bool) -> str:
    if f.fails_strict:
        return "❌" if strict else "⚠️"
    return "ℹ️"


def _table(rows: Sequence[Comparison], top_n: int) -> list[str]:
    lines = ["| case | metric | baseline | current | change (95% CI) | detects | verdict |",
             "|---|---|---:|---:|---:|---:|---|"]
    for c in rows[:top_n]:
        change = f"{fmt_change(c.change_pct)} {fmt_ci(c)}".strip()
        verdict = f"{ICON[c.verdict]} {c.verdict.value}"
        if c.metric == TIME_METRIC and c.processes > 1:
            verdict += f" ({c.processes} processes)"
        lines.append(f"| `{_code(shorten(c.case_id, 70))}` | {_escape(metric_title(c))} | "
                     f"{fmt_value(c.baseline, c.unit)} | {fmt_value(c.current, c.unit)} | {change} | "
                     f"{fmt_detects(c)} | {verdict} |")
    if len(rows) > top_n:
        lines.append(f"| … {len(rows) - top_n} others | | | | | | |")
    return lines


def _speedups(run: Run | None, top_n: int) -> list[str]:
    cases = [r for r in (run.results if run else ()) if r.speedup is not None]
    if not cases:
        return []
    out = ["### Speedup against the reference (timed alternately, same inputs)", "",
           "| case | speedup | target |", "|---|---:|---:|"]
    for r in cases[:top_n]:
        s = r.speedup
        assert s is not None
        target = f"≥ {r.thresholds.min_speedup:g}x" if r.thresholds.min_speedup else "-"
        out.append(f"| `{_code(shorten(r.case_id, 70))}` | {s.median:.2f}x vs {_escape(s.reference)} "
                   f"(CI {s.ci_low:.2f}-{s.ci_high:.2f}) | {target} |")
    return out + [""]


_PROFILE_COLUMNS = (("gpu__time_duration.sum", "duration", "ns"),
                    ("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occ.", "%"),
                    ("sm__maximum_warps_per_active_cycle_pct", "theoretical occ.", "%"),
                    ("dram__bytes.sum.per_second", "DRAM bandwidth", "byte/s"),
                    ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "DRAM % of peak", "%"),
                    ("launch__registers_per_thread", "registers", ""),
                    ("derived__local_spilling_requests", "spills", ""))


def _profile_table(run: Run | None, top_n: int) -> list[str]:
    """Per case and kernel, the ncu readings people look for first (this run's values)."""
    if run is None:
        return []
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for res in run.results:
        for m in res.metrics:
            if m.source == "ncu":
                rows.setdefault((res.case_id, m.kernel), {})[m.name] = m.value
    if not rows:
        return []
    out = ["### Profiler metrics (Nsight Compute, one launch per kernel per case)", "",
           "| case | kernel | " + " | ".join(label for _, label, _ in _PROFILE_COLUMNS) + " |",
           "|---|---|" + "---:|" * len(_PROFILE_COLUMNS)]
    for (case_id, kernel), values in sorted(rows.items())[:top_n]:
        cells = [fmt_value(values.get(name), unit) for name, _, unit in _PROFILE_COLUMNS]
        names = f"| `{_code(case_label(case_id, 50))}` | `{_code(kernel_label(kernel, 40))}` | "
        out.append(names + " | ".join(cells) + " |")
    if len(rows) > top_n:
        out.append(f"| … {len(rows) - top_n} others | | " + "| " * len(_PROFILE_COLUMNS))
    return out + [""]


_TRANSFER_COLUMNS = (("nsys.memcpy_bytes_per_call", "copied per call", "byte"),
                     ("nsys.memcpy_ns_per_call", "copy time per call", "ns"),
                     ("nsys.memcpy_bytes_per_second", "copy bandwidth", "byte/s"),
                     ("nsys.memset_bytes_per_call", "memset per call", "byte"))


def _transfers(run: Run | None, top_n: int) -> list[str]:
    """Copy-engine work (memcpy/memset) per case from nsys, and the profilers' notes on such cases: a
    case that launches no kernel has nothing for ncu to profile, which is not a failure."""
    if run is None:
        return []
    rows: dict[str, dict[str, float]] = {}
    for res in run.results:
        values = {m.name: m.value for m in res.metrics if m.source == "nsys" and not m.kernel}
        if values.get("nsys.memcpy_bytes_per_call") or values.get("nsys.memset_bytes_per_call"):
            rows[res.case_id] = values
    notes = [(r.case_id, n) for r in run.results for n in r.profile_notes]
    if not rows and not notes:
        return []
    out = ["### Copy-engine transfers (Nsight Systems)", ""]
    if rows:
        out += ["| case | " + " | ".join(label for _, label, _ in _TRANSFER_COLUMNS) + " |",
                "|---|" + "---:|" * len(_TRANSFER_COLUMNS)]
        for case_id, values in sorted(rows.items())[:top_n]:
            cells = [fmt_value(values.get(name), unit) for name, _, unit in _TRANSFER_COLUMNS]
            out.append(f"| `{_code(case_label(case_id, 60))}` | " + " | ".join(cells) + " |")
        out.append("")
    out += [f"- ℹ️ `{_code(shorten(cid, 80))}`: {_escape(note)}" for cid, note in notes[:top_n]]
    return out + [""]


def _gpu_state(run: Run | None, top_n: int) -> list[str]:
    cases = [r for r in (run.results if run else ()) if r.gpu_state is not None]
    if not cases:
        return []
    out = [f"<details><summary>GPU state while sampling ({len(cases)} case(s))</summary>", "",
           "| case | SM clock (min) | power | temperature | throttled | waited | dropped samples | autotune |",
           "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in cases[:top_n]:
        g = r.gpu_state
        assert g is not None
        clock = f"{fmt_value(g.sm_clock_mhz, '')} ({fmt_value(g.sm_clock_min_mhz, '')}) MHz"
        locked = " 🔒" if g.clocks_locked else ""
        tuned = "; ".join(f"{k}: {v}" for k, v in r.autotune) or "-"
        out.append(f"| `{_code(shorten(r.case_id, 60))}` | {clock}{locked} | {fmt_value(g.power_median_w, '')} W | "
                   f"{fmt_value(g.temperature_max_c, '')} °C | {100 * g.throttled_fraction:.0f}% "
                   f"(0x{g.throttle_reasons:x}) | {g.cooldown_ms:.0f} ms | {g.excluded_samples} | "
                   f"{_escape(shorten(tuned, 80))} |")
    return out + ["", "</details>", ""]


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
    """Pipes would split table cells; angle brackets would open HTML tags on GitHub."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    # inside backticks only the pipe needs care in a table; backticks themselves would end the span
    return text.replace("|", "\\|").replace("`", "'")
