"""Charts of a run against its device: the roofline and the memory-bound cases' achieved bandwidth (roofs
configured, else from the spec sheet, else the best measured), and the profilers' occupancy and DRAM
bandwidth per kernel. Both give the most severe cases (`ranked`, from gate_charts.ranked_case_ids) the
room first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfgate.baseline import Baseline
from perfgate.gate.bottleneck import DEVICE_PEAKS
from perfgate.model import Metric, Run
from perfgate.report.analyze_charts import kernel_labels
from perfgate.report.figures import TOP_N, new_figure, plain_log_axis, plain_text
from perfgate.report.format import case_labels

ROOFLINE_LABELS = 12  # cases named on the roofline; the rest are points
ACHIEVED_OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCC = "sm__maximum_warps_per_active_cycle_pct"
DRAM_BW = "dram__bytes.sum.per_second"


def ceilings(run: Run, peak_tflops: float | None, peak_gbps: float | None) -> tuple[float | None, float | None, str]:
    """Compute and bandwidth roofs: configured, else the device's spec sheet, else the best measured."""
    if peak_tflops and peak_gbps:
        return peak_tflops, peak_gbps, "configured"
    spec = next((v for k, v in DEVICE_PEAKS.items() if k in run.environment.device_name), None)
    if spec:
        return peak_tflops or spec[0], peak_gbps or spec[1], "spec sheet"
    tf = max((r.timing.tflops for r in run.results if r.timing.tflops), default=None)
    bw = max((r.timing.gbps for r in run.results if r.timing.gbps), default=None)
    return peak_tflops or tf, peak_gbps or bw, "best measured"


@plain_text
def roofline_figure(
    run: Run,
    peak_tflops: float | None = None,
    peak_gbps: float | None = None,
    ranked: Sequence[str] = (),
    top_n: int = ROOFLINE_LABELS,
) -> Any | None:
    """Cases with FLOPs on the roofline by arithmetic intensity; cases with only bytes as achieved
    bandwidth against the memory roof (they are placed by what they moved, not left out). Every case is a
    point, but only `top_n` are named and only `top_n` get a bar: the first in `ranked` (case ids, most
    severe first; run order without it), the others counted in the title."""
    compute = [r for r in run.results if r.flops and r.bytes_moved and r.timing.tflops]
    memory = _first(ranked, [r for r in run.results if r.bytes_moved and r.timing.gbps and not r.flops])
    if not compute and not memory:
        return None
    tflops, gbps, source = ceilings(run, peak_tflops, peak_gbps)
    fig = new_figure(11 if compute and memory else 7, 4.8)
    axes = fig.subplots(1, 2) if compute and memory else [fig.add_subplot()]
    if compute:
        _roofline(axes[0], compute, tflops, gbps, source, {r.case_id for r in _first(ranked, compute)[:top_n]})
    if memory:
        _bandwidth(axes[-1], memory[:top_n], gbps, source, len(memory) - top_n)
    return fig


def _first(ranked: Sequence[str], cases: list[Any]) -> list[Any]:
    """`cases` in the order of `ranked` (those not in it after, in their own order)."""
    if not ranked:
        return cases
    order = {cid: i for i, cid in enumerate(ranked)}
    return sorted(cases, key=lambda r: order.get(r.case_id, len(order)))


def _roofline(
    ax: Any, cases: list[Any], tflops: float | None, gbps: float | None, source: str, named: set[str]
) -> None:
    xs = [r.flops / r.bytes_moved for r in cases]
    if tflops and gbps:
        ridge = tflops * 1e3 / gbps  # FLOP/byte where the two roofs meet
        lo, hi = min(xs + [ridge]) / 10, max(xs + [ridge]) * 10
        ax.plot(
            [lo, ridge, hi],
            [lo * gbps / 1e3, tflops, tflops],
            color="black",
            label=f"roof ({source}): {gbps:,.0f} GB/s, {tflops:,.0f} TFLOP/s",
        )
        ax.set_xlim(lo, hi)
    ax.scatter(
        xs,
        [r.timing.tflops for r in cases],
        s=30,
        c=["#d62728" if r.case_id in named else "#1f77b4" for r in cases],
        zorder=3,
    )
    shown = [(x, r) for x, r in zip(xs, cases) if r.case_id in named]
    for label, (x, r) in zip(case_labels([r.case_id for _, r in shown], 28), shown):
        ax.annotate(label, (x, r.timing.tflops), fontsize="x-small", xytext=(3, -10), textcoords="offset points")
    others = len(cases) - len(shown)
    if others > 0:
        ax.text(
            0.99,
            0.01,
            f"{others:,} other case(s) unnamed",
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize="x-small",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_axis(ax.xaxis)
    plain_log_axis(ax.yaxis)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title("Roofline")
    ax.legend(loc="upper left", fontsize="x-small")


def _bandwidth(ax: Any, cases: list[Any], gbps: float | None, source: str, others: int) -> None:
    labels = case_labels([r.case_id for r in cases], 28)
    if others > 0:
        labels = [*labels, f"others ({others:,}) not shown"]
    ax.barh(labels[::-1], ([r.timing.gbps for r in cases] + [0.0] * (others > 0))[::-1], color="#1f77b4")
    if gbps:
        ax.axvline(gbps, color="black", linestyle="--", label=f"DRAM roof ({source}): {gbps:,.0f} GB/s")
        ax.legend(loc="lower right", fontsize="x-small")
    ax.tick_params(axis="y", labelsize="x-small")
    ax.set_xlabel("achieved bandwidth (GB/s, bytes read + written)")
    ax.set_title("Memory-bound cases")


@plain_text
def profiler_figure(run: Run, baseline: Baseline | None, ranked: Sequence[str] = ()) -> Any | None:
    """Achieved vs theoretical occupancy and DRAM bandwidth per kernel, this run and (where the baseline
    has profiler metrics for the kernel) the baseline: no legend entry without bars behind it."""
    cur = _kernel_values((r.case_id, m) for r in run.results for m in r.metrics)
    if not cur:
        return None
    base = _kernel_values(((cid, m) for cid, c in (baseline.cases.items() if baseline else ()) for m in c.metrics))
    order = {cid: i for i, cid in enumerate(ranked)}
    keys = sorted(cur, key=lambda k: (order.get(k[0], len(order)), k))[:TOP_N]  # most severe cases first
    names = zip(case_labels([cid for cid, _ in keys], 24), kernel_labels([k for _, k in keys], 20))
    labels = [f"{c}\n{k}" for c, k in names]
    fig = new_figure(max(7, 0.9 * len(keys) + 2), 6)
    occ_ax, bw_ax = fig.subplots(2, 1, sharex=True)
    series = [
        (src, name, tag)
        for src, name, tag in (
            (base, ACHIEVED_OCC, "baseline achieved"),
            (cur, ACHIEVED_OCC, "achieved"),
            (base, THEORETICAL_OCC, "baseline theoretical"),
            (cur, THEORETICAL_OCC, "theoretical"),
        )
        if any(name in src.get(k, {}) for k in keys)
    ]
    _grouped(occ_ax, keys, series)
    occ_ax.set_ylabel("occupancy (%)")
    others = (
        f" ({len(keys)} of {len(cur):,} case/kernel pairs, most severe cases first)" if len(cur) > len(keys) else ""
    )
    occ_ax.set_title(f"Occupancy per kernel{others}")
    bw = [
        (src, DRAM_BW, tag)
        for src, tag in ((base, "baseline"), (cur, "this run"))
        if any(DRAM_BW in src.get(k, {}) for k in keys)
    ]
    _grouped(bw_ax, keys, bw, scale=1e-9)
    bw_ax.set_ylabel("DRAM bandwidth (GB/s)")
    bw_ax.set_title("DRAM bandwidth per kernel")
    bw_ax.set_xticks(list(range(len(keys))), labels, rotation=45, ha="right", fontsize="x-small")
    return fig


def _grouped(
    ax: Any, keys: list[tuple[str, str]], series: list[tuple[dict[Any, dict[str, float]], str, str]], scale: float = 1.0
) -> None:
    width = 0.8 / max(1, len(series))
    for i, (src, name, tag) in enumerate(series):
        offset = (i - (len(series) - 1) / 2) * width
        ax.bar(
            [x + offset for x in range(len(keys))],
            [src.get(k, {}).get(name, 0.0) * scale for k in keys],
            width,
            label=tag,
        )
    if series:
        ax.legend(fontsize="x-small", ncols=len(series), loc="lower center", bbox_to_anchor=(0.5, 1.08), frameon=False)


def _kernel_values(pairs: Any) -> dict[tuple[str, str], dict[str, float]]:
    out: dict[tuple[str, str], dict[str, float]] = {}
    for case_id, m in pairs:
        assert isinstance(m, Metric)
        if m.name in (ACHIEVED_OCC, THEORETICAL_OCC, DRAM_BW):  # by name, whichever profiler measured it
            out.setdefault((case_id, m.kernel), {})[m.name] = m.value
    return out
