"""The Markdown summary: sized for a GitHub job summary or PR comment."""

from __future__ import annotations

from dataclasses import asdict
from collections.abc import Sequence

from perfgate.model import Comparison, Environment, GateResult, Run, Verdict
from perfgate.report.quantity import (case_label, fmt_change, fmt_ci, fmt_value, kernel_label, metric_title, movement,
                                      shorten)
from perfgate.report.terminal import headline

_ICON = {Verdict.REGRESSED: "🔴", Verdict.IMPROVED: "🟢", Verdict.UNCHANGED: "⚪", Verdict.NEW: "🆕",
         Verdict.MISSING: "❔", Verdict.NOT_COMPARABLE: "⛔", Verdict.PROFILE_FAILED: "⚠️"}
_ENV_FIELDS = ("device_name", "compute_capability", "driver_version", "cuda_version", "torch_version",
               "triton_version", "python_version", "perfgate_version")


def render_markdown(gate: GateResult, charts: Sequence[str] = (), top_n: int = 50, run: Run | None = None) -> str:
    """Headline, changed cases first, explanations, profiler metrics per kernel, everything else
    collapsed, environments, charts."""
    changed = [c for c in gate.comparisons if c.verdict in (Verdict.REGRESSED, Verdict.IMPROVED)]
    changed.sort(key=lambda c: (c.verdict is not Verdict.REGRESSED, -abs(c.change_pct or 0)))
    rest = [c for c in gate.comparisons if c not in changed]
    out = [f"## {'❌' if gate.failed else '✅'} {_escape(headline(gate))}", ""]
    if changed:
        out += ["### Changed", ""] + _table(changed, top_n) + [""]
    if gate.explanations:
        out += ["### Why (profiler metrics of the regressed cases)", ""]
        out += [f"- `{_code(shorten(cid, 80))}`: " + "; ".join(_escape(movement(r)) for r in rows)
                for cid, rows in gate.explanations.items()] + [""]
    out += _profile_table(run, top_n)
    problems = [c for c in rest if c.verdict in (Verdict.NOT_COMPARABLE, Verdict.PROFILE_FAILED) and c.note]
    if problems:
        out += ["### Could not compare", ""]
        out += [f"- {_ICON[c.verdict]} `{_code(shorten(c.case_id, 80))}`: {_escape(c.note.splitlines()[0])}"
                for c in problems[:top_n]] + [""]
    if rest:
        out += [f"<details><summary>All other results ({len(rest)})</summary>", ""] + _table(rest, top_n)
        out += ["", "</details>", ""]
    out += _environment(gate.baseline_env, gate.current_env)
    if charts:
        out += ["### Charts", ""] + [f"- [{name}]({name})" for name in charts] + [""]
    return "\n".join(out).rstrip() + "\n"


def _table(rows: Sequence[Comparison], top_n: int) -> list[str]:
    lines = ["| case | metric | baseline | current | change (95% CI) | verdict |",
             "|---|---|---:|---:|---:|---|"]
    for c in rows[:top_n]:
        change = f"{fmt_change(c.change_pct)} {fmt_ci(c)}".strip()
        lines.append(f"| `{_code(shorten(c.case_id, 70))}` | {_escape(metric_title(c))} | "
                     f"{fmt_value(c.baseline, c.unit)} | {fmt_value(c.current, c.unit)} | {change} | "
                     f"{_ICON[c.verdict]} {c.verdict.value} |")
    if len(rows) > top_n:
        lines.append(f"| … {len(rows) - top_n} others | | | | | |")
    return lines


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
        out.append(f"| `{_code(case_label(case_id, 50))}` | `{_code(kernel_label(kernel, 40))}` | " + " | ".join(cells) + " |")
    if len(rows) > top_n:
        out.append(f"| … {len(rows) - top_n} others | | " + "| " * len(_PROFILE_COLUMNS))
    return out + [""]


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
