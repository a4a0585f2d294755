"""report.md for `perfgate analyze`."""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.analyze.document import ComparisonRow
from perfgate.analyze.summary import Document, NcuSummary, TimelineSummary
from perfgate.report.format import fmt_value, kernel_label, shorten


def render_analysis_markdown(
    documents: Sequence[Document], comparison: Sequence[ComparisonRow], charts: Sequence[str], top_n: int = 15
) -> str:
    out = ["# perfgate analyze", ""]
    for doc in documents:
        out += [f"## `{_code(doc.source)}` ({doc.type})", ""]
        out += [f"> Note: {_escape(note)}." for note in doc.notes] + ([""] if doc.notes else [])
        out += _timeline(doc, top_n) if isinstance(doc, TimelineSummary) else _ncu(doc)
    if len(documents) > 1 and comparison:
        files = sorted({f for row in comparison for f in row.total_ns_by_file})
        out += [
            "## Comparison across files (kernel time)",
            "",
            "| kernel | " + " | ".join(_escape(f) for f in files) + " |",
            "|---|" + "---:|" * len(files),
        ]
        for row in comparison[:top_n]:
            cells = [fmt_value(row.total_ns_by_file.get(f), "ns") for f in files]
            out.append(f"| `{_code(shorten(row.name, 60))}` | " + " | ".join(cells) + " |")
        out.append("")
    if charts:
        out += ["## Charts", ""] + [f"![{c}]({c})" for c in charts] + [""]
    return "\n".join(out).rstrip() + "\n"


def _timeline(doc: TimelineSummary, top_n: int) -> list[str]:
    idle = doc.gpu_idle
    util = "-" if idle.utilization_pct is None else f"{idle.utilization_pct:.1f}%"
    out = [
        f"GPU busy {fmt_value(idle.busy_ns, 'ns')} of {fmt_value(idle.span_ns, 'ns')} ({util}); "
        f"idle {fmt_value(idle.idle_ns, 'ns')}.",
        "",
        "### Kernels",
        "",
        "| kernel | count | total | avg | median | min | max | share |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k in doc.kernels[:top_n]:
        s = k.stats
        out.append(
            f"| `{_code(kernel_label(k.name, 60))}` | {s.count} | {fmt_value(s.total_ns, 'ns')} | "
            f"{fmt_value(s.avg_ns, 'ns')} | {fmt_value(s.median_ns, 'ns')} | {fmt_value(s.min_ns, 'ns')} | "
            f"{fmt_value(s.max_ns, 'ns')} | {k.time_pct:.1f}% |"
        )
    if len(doc.kernels) > top_n:
        rest = doc.kernels[top_n:]
        out.append(
            f"| others ({len(rest)}) | {sum(k.stats.count for k in rest)} | "
            f"{fmt_value(sum(k.stats.total_ns for k in rest), 'ns')} | | | | | "
            f"{sum(k.time_pct for k in rest):.1f}% |"
        )
    if doc.memory:
        out += [
            "",
            "### Memory transfers",
            "",
            "| kind | count | bytes | time | bandwidth |",
            "|---|---:|---:|---:|---:|",
        ]
        out += [
            f"| {_escape(m.kind)} | {m.stats.count} | {fmt_value(m.bytes, 'byte')} | "
            f"{fmt_value(m.stats.total_ns, 'ns')} | "
            f"{'-' if m.gbps is None else f'{m.gbps:.1f} GB/s'} |"
            for m in doc.memory
        ]
    if doc.api:
        out += ["", "### CUDA API", "", "| call | count | total | avg |", "|---|---:|---:|---:|"]
        out += [
            f"| {_escape(a.name)} | {a.stats.count} | {fmt_value(a.stats.total_ns, 'ns')} | "
            f"{fmt_value(a.stats.avg_ns, 'ns')} |"
            for a in doc.api[:top_n]
        ]
    if doc.nvtx:
        out += ["", "### NVTX ranges", "", "| range | count | total | avg |", "|---|---:|---:|---:|"]
        out += [
            f"| `{_code(shorten(r.range, 60))}` | {r.stats.count} | {fmt_value(r.stats.total_ns, 'ns')} | "
            f"{fmt_value(r.stats.avg_ns, 'ns')} |"
            for r in doc.nvtx[:top_n]
        ]
    return out + [""]


def _ncu(doc: NcuSummary) -> list[str]:
    out = [
        "| kernel | time | bottleneck | SM SOL | mem SOL | DRAM | occupancy (ach/theo) | limiter | regs |",
        "|---|---:|---|---:|---:|---:|---:|---|---:|",
    ]
    for d in doc.diagnosis:
        occ = f"{_p(d.achieved_occupancy_pct)} / {_p(d.theoretical_occupancy_pct)}"
        out.append(
            f"| `{_code(kernel_label(d.name, 50))}` | {fmt_value(d.duration_ns, 'ns')} | **{d.bottleneck}** | "
            f"{_p(d.sm_sol_pct)} | {_p(d.memory_sol_pct)} | {_p(d.dram_pct)} | {occ} | "
            f"{d.occupancy_limiter or '-'} | {fmt_value(d.registers_per_thread, '')} |"
        )
    out.append("")
    for d in doc.diagnosis:
        out.append(f"**`{_code(kernel_label(d.name, 70))}`** ({d.bottleneck}): {_escape('; '.join(d.reasons))}.")
        stalls = ", ".join(f"{name} {cycles:.1f}" for name, cycles in d.top_stalls)
        if stalls:
            out.append(f"Top warp stalls (cycles/issue): {stalls}.")
        out += [f"- {_escape(r)}" for r in d.recommendations] + [""]
    return out


def _p(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}%"


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")
