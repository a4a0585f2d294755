"""Charts for `perfgate analyze`: timeline sources and ncu sources. Each builder returns a Figure."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from perfgate.report.figures import new_figure, save, top_n_with_others
from perfgate.report.quantity import kernel_label

TOP_N = 12
BOTTLENECK_COLOURS = {"memory-bound": "#1f77b4", "compute-bound": "#d62728", "latency-bound": "#ff7f0e",
                      "unknown": "#7f7f7f"}


def kernel_timeline_figure(doc: dict[str, Any], timeline: Any) -> Any:
    """Each top kernel on its own row, bars where it ran (the rest folded into 'others')."""
    top = [k["name"] for k in doc["kernels"][:TOP_N]]
    rows = top + (["others"] if len(doc["kernels"]) > TOP_N else [])
    t0 = min((k.start_ns for k in timeline.kernels), default=0)
    fig = new_figure(10, max(3, 0.35 * len(rows) + 1.2))
    ax = fig.add_subplot()
    for y, row in enumerate(rows):
        spans = [((k.start_ns - t0) / 1e6, max(k.duration_ns / 1e6, 1e-4)) for k in timeline.kernels
                 if (k.name == row) or (row == "others" and k.name not in top)]
        ax.broken_barh(spans, (y - 0.4, 0.8))
    ax.set_yticks(range(len(rows)), [kernel_label(r) for r in rows], fontsize="x-small")
    ax.invert_yaxis()
    ax.set_xlabel("time since first kernel (ms)")
    ax.set_title("Kernel timeline")
    return fig


def duration_distribution_figure(doc: dict[str, Any], timeline: Any) -> Any:
    top = [k["name"] for k in doc["kernels"][:TOP_N]]
    data = [[k.duration_ns / 1e3 for k in timeline.kernels if k.name == name] for name in top]
    fig = new_figure(9, max(3, 0.35 * len(top) + 1.2))
    ax = fig.add_subplot()
    ax.boxplot(data, orientation="horizontal", tick_labels=[kernel_label(n) for n in top])
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("duration per launch (us)")
    ax.set_title("Kernel duration distribution")
    return fig


def top_kernels_figure(doc: dict[str, Any]) -> Any:
    bars = top_n_with_others([(kernel_label(k["name"]), k["total_ns"] / 1e6) for k in doc["kernels"]], TOP_N)
    fig = new_figure(8, max(3, 0.35 * len(bars) + 1.2))
    ax = fig.add_subplot()
    ax.barh([b[0] for b in bars][::-1], [b[1] for b in bars][::-1], color="#1f77b4")
    ax.set_xlabel("total GPU time (ms)")
    ax.set_title("Top kernels by total time")
    return fig


def memory_transfers_figure(doc: dict[str, Any]) -> Any:
    mem = doc["memory"]
    fig = new_figure(7, 3.5)
    ax = fig.add_subplot()
    ax.bar([m["kind"] for m in mem], [m["bytes"] / 1e6 for m in mem], color="#2ca02c")
    ax.set_ylabel("bytes moved (MB)")
    ax.set_title("Memory transfers by kind" + ("" if mem else " (none recorded)"))
    return fig


def bandwidth_figure(doc: dict[str, Any]) -> Any:
    mem = [m for m in doc["memory"] if m["gbps"] is not None]
    fig = new_figure(7, 3.5)
    ax = fig.add_subplot()
    ax.bar([m["kind"] for m in mem], [m["gbps"] for m in mem], color="#9467bd")
    ax.set_ylabel("achieved bandwidth (GB/s)")
    ax.set_title("Transfer bandwidth by kind" + ("" if mem else " (none recorded)"))
    return fig


def _diag_labels(diags: list[dict[str, Any]]) -> list[str]:
    return [f"{i}:{kernel_label(d['name'], 24)}" for i, d in enumerate(diags)]


def _grouped_bars(diags, series: list[tuple[str, str]], ylabel: str, title: str) -> Any:
    fig = new_figure(max(7, 0.8 * len(diags) + 2), 4)
    ax = fig.add_subplot()
    width = 0.8 / len(series)
    for i, (key, label) in enumerate(series):
        ax.bar([x + (i - (len(series) - 1) / 2) * width for x in range(len(diags))],
               [d[key] if d[key] is not None else 0.0 for d in diags], width, label=label)
    ax.set_xticks(range(len(diags)), _diag_labels(diags), rotation=45, ha="right", fontsize="x-small")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 105)
    ax.set_title(title)
    ax.legend(fontsize="small")
    return fig


def gpu_utilization_figure(diags) -> Any:
    return _grouped_bars(diags, [("sm_sol_pct", "SM (compute)"), ("memory_sol_pct", "memory")],
                         "% of peak", "Speed of light per kernel")


def memory_performance_figure(diags) -> Any:
    return _grouped_bars(diags, [("dram_pct", "DRAM % of peak"), ("l1_hit_pct", "L1 hit rate"), ("l2_hit_pct", "L2 hit rate")],
                         "%", "Memory behaviour per kernel")


def occupancy_figure(diags) -> Any:
    return _grouped_bars(diags, [("achieved_occupancy_pct", "achieved"), ("theoretical_occupancy_pct", "theoretical")],
                         "occupancy (%)", "Occupancy per kernel")


def bottleneck_figure(diags) -> Any:
    """SM vs memory speed-of-light: the corner a kernel sits in is its bottleneck class."""
    fig = new_figure(6, 5)
    ax = fig.add_subplot()
    for i, d in enumerate(diags):
        ax.scatter([d["memory_sol_pct"] or 0], [d["sm_sol_pct"] or 0], color=BOTTLENECK_COLOURS[d["bottleneck"]],
                   label=d["bottleneck"], s=40)
        ax.annotate(str(i), ((d["memory_sol_pct"] or 0), (d["sm_sol_pct"] or 0)), fontsize="x-small",
                    xytext=(3, 3), textcoords="offset points")
    ax.axvline(60, color="grey", linestyle=":")
    ax.axhline(60, color="grey", linestyle=":")
    ax.plot([0, 100], [0, 100], color="grey", linewidth=0.6)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize="small", loc="lower right")
    ax.set_xlim(0, 105)
    ax.set_ylim(0, 105)
    ax.set_xlabel("memory throughput (% of peak)")
    ax.set_ylabel("SM throughput (% of peak)")
    ax.set_title("Bottleneck class per kernel (numbers: kernel index)")
    return fig


RADAR_AXES = (("sm_sol_pct", "SM SOL"), ("memory_sol_pct", "memory SOL"), ("dram_pct", "DRAM"),
              ("achieved_occupancy_pct", "occupancy"), ("l2_hit_pct", "L2 hit"), ("tensor_pipe_pct", "tensor pipe"))


def kernel_comparison_figure(diags) -> Any:
    """Radar of the percentage metrics, one polygon per kernel (top kernels by duration)."""
    top = sorted(range(len(diags)), key=lambda i: -(diags[i]["duration_ns"] or 0))[:6]
    angles = [2 * math.pi * i / len(RADAR_AXES) for i in range(len(RADAR_AXES))]
    fig = new_figure(6.5, 6)
    ax = fig.add_subplot(projection="polar")
    for i in top:
        values = [diags[i][key] or 0.0 for key, _ in RADAR_AXES]
        ax.plot(angles + angles[:1], values + values[:1], label=_diag_labels(diags)[i])
        ax.fill(angles + angles[:1], values + values[:1], alpha=0.08)
    ax.set_xticks(angles, [label for _, label in RADAR_AXES], fontsize="small")
    ax.set_ylim(0, 100)
    ax.set_title("Kernel comparison (% of peak / rate)")
    ax.legend(fontsize="x-small", loc="upper right", bbox_to_anchor=(1.35, 1.1))
    return fig


def write_analysis_charts(documents: list[dict[str, Any]], out_dir: Path) -> list[str]:
    """All charts for each analysed file (prefixed by its index when there are several)."""
    from perfgate.parse.load import load

    names: list[str] = []
    for i, doc in enumerate(documents):
        prefix = f"{i}_" if len(documents) > 1 else ""
        if "kernels" in doc:
            timeline = load(Path(doc["source"]))
            figs = [(kernel_timeline_figure(doc, timeline), "kernel_timeline.png"),
                    (duration_distribution_figure(doc, timeline), "kernel_duration_distribution.png"),
                    (top_kernels_figure(doc), "top_kernels.png"), (memory_transfers_figure(doc), "memory_transfers.png"),
                    (bandwidth_figure(doc), "bandwidth_analysis.png")]
        else:
            d = doc["diagnosis"]
            figs = [(gpu_utilization_figure(d), "gpu_utilization.png"), (memory_performance_figure(d), "memory_performance.png"),
                    (occupancy_figure(d), "occupancy_analysis.png"), (bottleneck_figure(d), "bottleneck_analysis.png"),
                    (kernel_comparison_figure(d), "kernel_comparison.png")]
        names += [save(fig, out_dir, prefix + name).name for fig, name in figs]
    return names
