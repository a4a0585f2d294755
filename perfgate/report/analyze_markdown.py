"""report.md for `perfgate analyze`."""

from __future__ import annotations

from typing import Any

from perfgate.report.quantity import fmt_value, kernel_label, shorten


def render_analysis_markdown(documents: list[dict[str, Any]], comparison: list[dict[str, Any]],
                             charts: list[str], top_n: int = 15) -> str:
    out = ["# perfgate analyze", ""]
    for doc in documents:
        out += [f"## `{doc['source']}` ({doc['type']})", ""]
        out += _timeline(doc, top_n) if "kernels" in doc else _ncu(doc)
    if len(documents) > 1 and comparison:
        files = sorted({f for row in comparison for f in row["total_ns_by_file"]})
        out += ["## Comparison across files (kernel time)", "", "| kernel | " + " | ".join(files) + " |",
                "|---|" + "---:|" * len(files)]
        for row in comparison[:top_n]:
            cells = [fmt_value(row["total_ns_by_file"].get(f), "ns") for f in files]
            out.append(f"| `{shorten(row['name'], 60)}` | " + " | ".join(cells) + " |")
        out.append("")
    if charts:
        out += ["## Charts", ""] + [f"![{c}]({c})" for c in charts] + [""]
    return "\n".join(out).rstrip() + "\n"


def _timeline(doc: dict[str, Any], top_n: int) -> list[str]:
    idle = doc["gpu_idle"]
    util = "-" if idle["utilization_pct"] is None else f"{idle['utilization_pct']:.1f}%"
    out = [f"GPU busy {fmt_value(idle['busy_ns'], 'ns')} of {fmt_value(idle['span_ns'], 'ns')} ({util}); "
           f"idle {fmt_value(idle['idle_ns'], 'ns')}.", "", "### Kernels", "",
           "| kernel | count | total | avg | median | min | max | share |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    kernels = doc["kernels"]
    for k in kernels[:top_n]:
        out.append(f"| `{kernel_label(k['name'], 60)}` | {k['count']} | {fmt_value(k['total_ns'], 'ns')} | "
                   f"{fmt_value(k['avg_ns'], 'ns')} | {fmt_value(k['median_ns'], 'ns')} | {fmt_value(k['min_ns'], 'ns')} | "
                   f"{fmt_value(k['max_ns'], 'ns')} | {k['time_pct']:.1f}% |")
    if len(kernels) > top_n:
        rest = kernels[top_n:]
        out.append(f"| others ({len(rest)}) | {sum(k['count'] for k in rest)} | "
                   f"{fmt_value(sum(k['total_ns'] for k in rest), 'ns')} | | | | | {sum(k['time_pct'] for k in rest):.1f}% |")
    if doc["memory"]:
        out += ["", "### Memory transfers", "", "| kind | count | bytes | time | bandwidth |", "|---|---:|---:|---:|---:|"]
        out += [f"| {m['kind']} | {m['count']} | {fmt_value(m['bytes'], 'byte')} | {fmt_value(m['total_ns'], 'ns')} | "
                f"{_gbps(m['gbps'])} |" for m in doc["memory"]]
    if doc["api"]:
        out += ["", "### CUDA API", "", "| call | count | total | avg |", "|---|---:|---:|---:|"]
        out += [f"| {a['name']} | {a['count']} | {fmt_value(a['total_ns'], 'ns')} | {fmt_value(a['avg_ns'], 'ns')} |"
                for a in doc["api"][:top_n]]
    if doc["nvtx"]:
        out += ["", "### NVTX ranges", "", "| range | count | total | avg |", "|---|---:|---:|---:|"]
        out += [f"| `{shorten(r['range'], 60)}` | {r['count']} | {fmt_value(r['total_ns'], 'ns')} | "
                f"{fmt_value(r['avg_ns'], 'ns')} |" for r in doc["nvtx"][:top_n]]
    return out + [""]


def _ncu(doc: dict[str, Any]) -> list[str]:
    out = ["| kernel | time | bottleneck | SM SOL | mem SOL | DRAM | occupancy (ach/theo) | limiter | regs |",
           "|---|---:|---|---:|---:|---:|---:|---|---:|"]
    for d in doc["diagnosis"]:
        occ = f"{_p(d['achieved_occupancy_pct'])} / {_p(d['theoretical_occupancy_pct'])}"
        out.append(f"| `{kernel_label(d['name'], 50)}` | {fmt_value(d['duration_ns'], 'ns')} | **{d['bottleneck']}** | "
                   f"{_p(d['sm_sol_pct'])} | {_p(d['memory_sol_pct'])} | {_p(d['dram_pct'])} | {occ} | "
                   f"{d['occupancy_limiter'] or '-'} | {fmt_value(d['registers_per_thread'], '')} |")
    out.append("")
    for d in doc["diagnosis"]:
        out.append(f"**`{kernel_label(d['name'], 70)}`** ({d['bottleneck']}): {'; '.join(d['reasons'])}.")
        stalls = ", ".join(f"{name} {cycles:.1f}" for name, cycles in d["top_stalls"])
        if stalls:
            out.append(f"Top warp stalls (cycles/issue): {stalls}.")
        out += [f"- {r}" for r in d["recommendations"]] + [""]
    return out


def _gbps(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f} GB/s"


def _p(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}%"
