"""Charts for `perfgate analyze`: timeline sources and ncu sources. Each builder returns a Figure, or None
when there is nothing worth drawing (a single 28-byte memset is not a transfer chart)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfgate.analyze.ncu_diagnosis import Diagnosis
from perfgate.analyze.summary import Document, TimelineSummary
from perfgate.report.figures import new_figure, plain_log_axis, plain_text, save, top_n_with_others, unique_labels
from perfgate.report.format import kernel_label

TOP_N = 12
MEMORY_MIN_BYTES = 1 << 20  # below a MiB of transfers, or 1% of kernel time, a transfer chart shows nothing
MEMORY_MIN_TIME_SHARE = 0.01
BOTTLENECK_COLOURS = {
    "memory-bound": "#1f77b4",
    "compute-bound": "#d62728",
    "latency-bound": "#ff7f0e",
    "unknown": "#7f7f7f",
}


def kernel_labels(names: Sequence[str], width: int = 32) -> list[str]:
    return unique_labels(names, lambda n: kernel_label(n, width), lambda n: kernel_label(n, width, signature=True))


@plain_text
def kernel_timeline_figure(doc: TimelineSummary) -> Any | None:
    """Each top kernel on its own row, bars where it ran."""
    names = [k.name for k in doc.kernels if k.name in doc.spans][:TOP_N]
    if not names:
        return None
    t0 = min(int(doc.spans[n][0].min()) for n in names)
    fig = new_figure(10, max(3, 0.35 * len(names) + 1.2))
    ax = fig.add_subplot()
    for y, name in enumerate(names):
        starts, ends = doc.spans[name]
        ax.broken_barh([((s - t0) / 1e6, max((e - s) / 1e6, 1e-4)) for s, e in zip(starts, ends)], (y - 0.4, 0.8))
    ax.set_yticks(range(len(names)), kernel_labels(names), fontsize="x-small")
    ax.invert_yaxis()
    ax.set_xlabel("time since first kernel (ms)")
    ax.set_title("Kernel timeline (top kernels by total time)")
    return fig


@plain_text
def duration_distribution_figure(doc: TimelineSummary) -> Any | None:
    names = [k.name for k in doc.kernels if k.name in doc.spans][:TOP_N]
    if not names:
        return None
    data = [(doc.spans[n][1] - doc.spans[n][0]) / 1e3 for n in names]
    fig = new_figure(11, max(3, 0.35 * len(names) + 1.2))
    ax = fig.add_subplot()
    ax.boxplot(data, orientation="horizontal", tick_labels=kernel_labels(names))
    ax.set_xscale("log")
    plain_log_axis(ax.xaxis)
    ax.invert_yaxis()
    ax.set_xlabel("duration per launch (us)")
    ax.set_title("Kernel duration distribution")
    return fig


@plain_text
def top_kernels_figure(doc: TimelineSummary) -> Any | None:
    if not doc.kernels:
        return None
    labels = kernel_labels([k.name for k in doc.kernels])
    bars = top_n_with_others([(label, k.stats.total_ns / 1e6) for label, k in zip(labels, doc.kernels)], TOP_N)
    fig = new_figure(8, max(3, 0.35 * len(bars) + 1.2))
    ax = fig.add_subplot()
    ax.barh([b[0] for b in bars][::-1], [b[1] for b in bars][::-1], color="#1f77b4")
    ax.set_xlabel("total GPU time (ms)")
    ax.set_title(f"Top kernels by total time ({len(doc.kernels)} kernels)")
    return fig


def _memory_worth_drawing(doc: TimelineSummary) -> bool:
    moved = sum(m.bytes for m in doc.memory)
    kernel_ns = sum(k.stats.total_ns for k in doc.kernels)
    copy_ns = sum(m.stats.total_ns for m in doc.memory)
    return moved >= MEMORY_MIN_BYTES or (kernel_ns > 0 and copy_ns >= MEMORY_MIN_TIME_SHARE * kernel_ns)


@plain_text
def memory_transfers_figure(doc: TimelineSummary) -> Any | None:
    if not doc.memory or not _memory_worth_drawing(doc):
        return None
    fig = new_figure(7, 3.5)
    ax = fig.add_subplot()
    ax.bar([m.kind for m in doc.memory], [m.bytes / 1e6 for m in doc.memory], color="#2ca02c")
    ax.set_ylabel("bytes moved (MB)")
    ax.set_title("Memory transfers by kind")
    return fig


@plain_text
def bandwidth_figure(doc: TimelineSummary) -> Any | None:
    rows = [m for m in doc.memory if m.gbps is not None and m.bytes > 0]
    if not rows or not _memory_worth_drawing(doc):
        return None
    fig = new_figure(7, 3.5)
    ax = fig.add_subplot()
    ax.bar([m.kind for m in rows], [m.gbps or 0.0 for m in rows], color="#9467bd")
    ax.set_ylabel("achieved bandwidth (GB/s)")
    ax.set_title("Transfer bandwidth by kind")
    return fig


def _diag_labels(diags: Sequence[Diagnosis]) -> list[str]:
    return kernel_labels([d.name for d in diags], 28)


# Launches drawn one row each: the longest ones. A chart of every launch grew with the file (300 launches:
# 28 s and 381 MB for a 136-inch figure); every launch stays in analysis.json and report.md.
MAX_CHART_LAUNCHES = 40


def _longest(diags: Sequence[Diagnosis], limit: int = MAX_CHART_LAUNCHES) -> list[Diagnosis]:
    """At most `limit` launches, the longest, in their order in the file."""
    if len(diags) <= limit:
        return list(diags)
    keep = set(sorted(range(len(diags)), key=lambda i: -(diags[i].duration_ns or 0))[:limit])
    return [d for i, d in enumerate(diags) if i in keep]


def _of_total(title: str, shown: int, total: int) -> str:
    return title if shown == total else f"{title} (the {shown} longest of {total} launches)"


def _grouped_bars(diags: Sequence[Diagnosis], series: list[tuple[str, str]], xlabel: str, title: str) -> Any | None:
    """One row per launch (horizontal: long kernel names never overlap), one bar per series, the longest
    MAX_CHART_LAUNCHES launches; a metric ncu did not collect is drawn as a missing bar, not as zero."""
    usable = [d for d in diags if any(getattr(d, key) is not None for key, _ in series)]
    if not usable:
        return None
    rows = _longest(usable)
    title = _of_total(title, len(rows), len(usable))
    fig = new_figure(9, max(3, 0.45 * len(rows) * len(series) / 2 + 1.5))
    ax = fig.add_subplot()
    height = 0.8 / len(series)
    for i, (key, label) in enumerate(series):
        ys = [y + (i - (len(series) - 1) / 2) * height for y in range(len(rows))]
        values = [getattr(d, key) for d in rows]
        ax.barh(
            [y for y, v in zip(ys, values) if v is not None], [v for v in values if v is not None], height, label=label
        )
    ax.set_yticks(range(len(rows)), _diag_labels(rows), fontsize="x-small")
    ax.invert_yaxis()
    ax.set_xlim(0, 105)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(fontsize="small", loc="lower right")
    return fig


@plain_text
def gpu_utilization_figure(diags: Sequence[Diagnosis]) -> Any | None:
    return _grouped_bars(
        diags, [("sm_sol_pct", "SM (compute)"), ("memory_sol_pct", "memory")], "% of peak", "Speed of light per kernel"
    )


@plain_text
def memory_performance_figure(diags: Sequence[Diagnosis]) -> Any | None:
    return _grouped_bars(
        diags,
        [("dram_pct", "DRAM % of peak"), ("l1_hit_pct", "L1 hit rate"), ("l2_hit_pct", "L2 hit rate")],
        "%",
        "Memory behaviour per kernel",
    )


@plain_text
def occupancy_figure(diags: Sequence[Diagnosis]) -> Any | None:
    return _grouped_bars(
        diags,
        [("achieved_occupancy_pct", "achieved"), ("theoretical_occupancy_pct", "theoretical")],
        "occupancy (%)",
        "Occupancy per kernel",
    )


@plain_text
def bottleneck_figure(diags: Sequence[Diagnosis]) -> Any | None:
    """SM vs memory speed-of-light: the corner a kernel sits in is its bottleneck class."""
    usable = [d for d in diags if d.sm_sol_pct is not None and d.memory_sol_pct is not None]
    if not usable:
        return None
    shown = _longest(usable)
    points = list(enumerate(shown))
    labels = _diag_labels(shown)
    fig = new_figure(7, 5.5)
    ax = fig.add_subplot()
    for cls, colour in BOTTLENECK_COLOURS.items():
        members = [(i, d) for i, d in points if d.bottleneck == cls]
        if members:
            ax.scatter(
                [d.memory_sol_pct for _, d in members],
                [d.sm_sol_pct for _, d in members],
                color=colour,
                label=cls,
                s=40,
            )
    for i, d in points:
        ax.annotate(
            str(i),
            (d.memory_sol_pct or 0, d.sm_sol_pct or 0),
            fontsize="x-small",
            xytext=(3, 3),
            textcoords="offset points",
        )
    ax.axvline(60, color="grey", linestyle=":")
    ax.axhline(60, color="grey", linestyle=":")
    ax.plot([0, 100], [0, 100], color="grey", linewidth=0.6)
    ax.legend(fontsize="small", loc="lower right")
    ax.set_xlim(0, 105)
    ax.set_ylim(0, 105)
    ax.set_xlabel("memory throughput (% of peak)")
    ax.set_ylabel("SM throughput (% of peak)")
    ax.set_title(_of_total("Bottleneck class per kernel", len(shown), len(usable)))
    fig.text(0.01, 0.005, "  ".join(f"{i}: {labels[i]}" for i, _ in points[:20]), fontsize="xx-small", wrap=True)
    return fig


HEATMAP_METRICS = (
    ("sm_sol_pct", "SM SOL"),
    ("memory_sol_pct", "memory SOL"),
    ("dram_pct", "DRAM"),
    ("achieved_occupancy_pct", "occupancy"),
    ("l2_hit_pct", "L2 hit"),
    ("tensor_pipe_pct", "tensor pipe"),
)


@plain_text
def kernel_comparison_figure(diags: Sequence[Diagnosis]) -> Any | None:
    """Every kernel's percentage metrics side by side, values written in the cells: nothing hides behind
    another series (the radar this replaces drew six polygons over each other)."""
    if not diags:
        return None
    import numpy as np

    top = sorted(range(len(diags)), key=lambda i: -(diags[i].duration_ns or 0))[:24]
    rows = [diags[i] for i in top]
    values = np.array(
        [[getattr(d, key) if getattr(d, key) is not None else np.nan for key, _ in HEATMAP_METRICS] for d in rows],
        dtype=float,
    )
    fig = new_figure(8, max(3, 0.4 * len(rows) + 1.5))
    ax = fig.add_subplot()
    image = ax.imshow(values, aspect="auto", cmap="viridis", vmin=0, vmax=100)
    for r in range(values.shape[0]):
        for c in range(values.shape[1]):
            text = "-" if np.isnan(values[r, c]) else f"{values[r, c]:.0f}"
            ax.text(
                c,
                r,
                text,
                ha="center",
                va="center",
                fontsize="x-small",
                color="white" if np.isnan(values[r, c]) or values[r, c] < 60 else "black",
            )
    ax.set_xticks(range(len(HEATMAP_METRICS)), [label for _, label in HEATMAP_METRICS], fontsize="small")
    ax.set_yticks(range(len(rows)), _diag_labels(rows), fontsize="x-small")
    fig.colorbar(image, ax=ax, label="% of peak / rate")
    ax.set_title("Kernel comparison (largest duration first)")
    return fig


@plain_text
def timeline_figures(doc: TimelineSummary) -> list[tuple[Any | None, str]]:
    return [
        (kernel_timeline_figure(doc), "kernel_timeline.png"),
        (duration_distribution_figure(doc), "kernel_duration_distribution.png"),
        (top_kernels_figure(doc), "top_kernels.png"),
        (memory_transfers_figure(doc), "memory_transfers.png"),
        (bandwidth_figure(doc), "bandwidth_analysis.png"),
    ]


def ncu_figures(diags: Sequence[Diagnosis]) -> list[tuple[Any | None, str]]:
    return [
        (gpu_utilization_figure(diags), "gpu_utilization.png"),
        (memory_performance_figure(diags), "memory_performance.png"),
        (occupancy_figure(diags), "occupancy_analysis.png"),
        (bottleneck_figure(diags), "bottleneck_analysis.png"),
        (kernel_comparison_figure(diags), "kernel_comparison.png"),
    ]


def write_analysis_charts(documents: Sequence[Document], out_dir: Path) -> list[str]:
    """The charts worth drawing for each analysed file (prefixed by its index when there are several)."""
    names: list[str] = []
    for i, doc in enumerate(documents):
        prefix = f"{i}_" if len(documents) > 1 else ""
        figs = timeline_figures(doc) if isinstance(doc, TimelineSummary) else ncu_figures(doc.diagnosis)
        names += [save(fig, out_dir, prefix + name).name for fig, name in figs if fig is not None]
    return names
