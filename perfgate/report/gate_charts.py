"""Charts of a gate run: change per case, trends, sample distributions, roofline, profiler metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfgate.baseline import Baseline
from perfgate.metrics import TIME_METRIC
from perfgate.model import Comparison, GateResult, Run, Verdict
from perfgate.report.figures import VERDICT_COLOURS, new_figure, save, top_n_with_others
from perfgate.report.quantity import case_label, kernel_label

TOP_N = 25
ACHIEVED_OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCC = "sm__maximum_warps_per_active_cycle_pct"
DRAM_BW = "dram__bytes.sum.per_second"


def time_rows(gate: GateResult) -> list[Comparison]:
    return [c for c in gate.comparisons if c.metric == TIME_METRIC and c.change_pct is not None]


def change_per_case_figure(gate: GateResult, top_n: int = TOP_N) -> Any:
    """Horizontal bars of time change per case, largest first, coloured by verdict."""
    rows = time_rows(gate)
    verdicts = {case_label(c.case_id): c.verdict.value for c in rows}
    bars = top_n_with_others([(case_label(c.case_id), c.change_pct or 0.0) for c in rows], top_n, combine="median")
    fig = new_figure(8, max(2.5, 0.32 * len(bars) + 1))
    ax = fig.add_subplot()
    labels = [b[0] for b in bars][::-1]
    values = [b[1] for b in bars][::-1]
    ax.barh(labels, values, color=[VERDICT_COLOURS.get(verdicts.get(lbl, "unchanged"), "#7f7f7f") for lbl in labels])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("change in median time vs baseline (%)")
    ax.set_title("Time change per case (positive = slower)")
    return fig


def trend_figure(case_id: str, history: list[dict[str, Any]], baseline_ms: float, threshold_pct: float,
                 current_ms: float) -> Any:
    """Median over stored runs, the baseline with its threshold band, and this run's point."""
    fig = new_figure(7, 3.5)
    ax = fig.add_subplot()
    xs = list(range(len(history)))
    ax.plot(xs, [h.median_ms for h in history], marker="o", color="#1f77b4", label="median (history)")
    ax.axhline(baseline_ms, color="black", linestyle="--", label="baseline")
    ax.axhspan(baseline_ms * (1 - threshold_pct / 100), baseline_ms * (1 + threshold_pct / 100), color="#cccccc",
               alpha=0.5, label=f"threshold ±{threshold_pct:g}%")
    ax.plot([len(history) - 1 if history else 0], [current_ms], marker="*", markersize=14, color="#d62728",
            linestyle="none", label="this run")
    ax.set_xlabel("run (oldest → newest)")
    ax.set_ylabel("median time (ms)")
    ax.set_title(f"Trend: {case_label(case_id, 60)}")
    ax.legend(loc="best", fontsize="small")
    return fig


def distribution_figure(case_id: str, baseline_ms: tuple[float, ...], current_ms: tuple[float, ...]) -> Any:
    fig = new_figure(5, 3.5)
    ax = fig.add_subplot()
    ax.boxplot([list(baseline_ms), list(current_ms)], tick_labels=["baseline", "this run"], showfliers=True)
    ax.set_ylabel("time per call (ms)")
    ax.set_title(f"Samples: {case_label(case_id, 40)}")
    return fig


def roofline_figure(run: Run, peak_tflops: float | None = None, peak_gbps: float | None = None) -> Any | None:
    """Achieved TFLOP/s against arithmetic intensity (FLOP/byte) for cases that declared both."""
    points = [(case_label(r.case_id, 30), r.flops / r.bytes_moved, r.timing.tflops) for r in run.results
              if r.flops and r.bytes_moved and r.timing.tflops]
    if not points:
        return None
    measured_bw = max((r.timing.gbps for r in run.results if r.timing.gbps), default=None)
    bw = peak_gbps or measured_bw
    compute = peak_tflops or max(p[2] for p in points)
    fig = new_figure(7, 4.5)
    ax = fig.add_subplot()
    ridge = compute * 1e3 / bw if bw else None  # FLOP/byte where the two roofs meet
    xs = [p[1] for p in points] + ([ridge] if ridge else [])
    lo, hi = min(xs) / 10, max(xs) * 10
    if ridge:
        ax.plot([lo, ridge, hi], [lo * bw / 1e3, compute, compute], color="black",
                label=f"roof: {bw:,.0f} GB/s, {compute:,.0f} TFLOP/s" + ("" if peak_gbps else " (best measured)"))
    for name, intensity, tflops in points:
        ax.scatter([intensity], [tflops], s=30)
        ax.annotate(name, (intensity, tflops), fontsize="x-small", xytext=(3, -10), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(min([p[2] for p in points] + ([lo * bw / 1e3] if bw else [])) / 2, compute * 2)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title("Roofline")
    ax.legend(loc="upper left", fontsize="small")
    return fig


def profiler_figure(run: Run, baseline: Baseline | None) -> Any | None:
    """Achieved vs theoretical occupancy and DRAM bandwidth per kernel, baseline against this run."""
    cur = _ncu_values((r.case_id, m) for r in run.results for m in r.metrics)
    if not cur:
        return None
    base = _ncu_values(((cid, m) for cid, c in (baseline.cases.items() if baseline else ()) for m in c.metrics))
    keys = sorted(cur)[:TOP_N]
    labels = [f"{case_label(cid, 24)}\n{kernel_label(k, 20)}" for cid, k in keys]
    fig = new_figure(max(7, 0.9 * len(keys) + 2), 6)
    occ_ax, bw_ax = fig.subplots(2, 1, sharex=True)
    xs = range(len(keys))
    width = 0.2
    for i, (src, name, tag) in enumerate(((base, ACHIEVED_OCC, "baseline achieved"), (cur, ACHIEVED_OCC, "achieved"),
                                          (base, THEORETICAL_OCC, "baseline theoretical"), (cur, THEORETICAL_OCC, "theoretical"))):
        occ_ax.bar([x + (i - 1.5) * width for x in xs], [src.get(k, {}).get(name, 0.0) for k in keys], width, label=tag)
    occ_ax.set_ylabel("occupancy (%)")
    occ_ax.set_title("Occupancy per kernel")
    occ_ax.legend(fontsize="x-small", ncols=2)
    for i, (src, tag) in enumerate(((base, "baseline"), (cur, "this run"))):
        bw_ax.bar([x + (i - 0.5) * 0.35 for x in xs], [src.get(k, {}).get(DRAM_BW, 0.0) / 1e9 for k in keys], 0.35, label=tag)
    bw_ax.set_ylabel("DRAM bandwidth (GB/s)")
    bw_ax.set_title("DRAM bandwidth per kernel")
    bw_ax.set_xticks(list(xs), labels, rotation=45, ha="right", fontsize="x-small")
    bw_ax.legend(fontsize="x-small")
    return fig


def _ncu_values(pairs) -> dict[tuple[str, str], dict[str, float]]:
    out: dict[tuple[str, str], dict[str, float]] = {}
    for case_id, m in pairs:
        if m.source == "ncu" and m.name in (ACHIEVED_OCC, THEORETICAL_OCC, DRAM_BW):
            out.setdefault((case_id, m.kernel), {})[m.name] = m.value
    return out


def write_gate_charts(gate: GateResult, run: Run, settings: Any, baseline: Baseline | None = None) -> list[Path]:
    """Write the PNGs into settings.report_dir; returns their paths for the Markdown links."""
    out: Path = settings.report_dir
    paths = [save(change_per_case_figure(gate), out, "change_per_case.png")] if time_rows(gate) else []
    samples = {r.case_id: r.samples_ms for r in run.results}
    changed = [c for c in time_rows(gate) if c.verdict in (Verdict.REGRESSED, Verdict.IMPROVED)][:TOP_N]
    history = _history(settings, run)
    for i, c in enumerate(changed):
        stem = f"case{i:02d}"
        if baseline and c.case_id in baseline.cases:
            paths.append(save(distribution_figure(c.case_id, baseline.cases[c.case_id].samples_ms, samples[c.case_id]),
                              out, f"{stem}_distribution.png"))
        if history is not None:
            rows = history.history(c.case_id, run.environment.device_name)
            paths.append(save(trend_figure(c.case_id, rows, c.baseline or 0.0, c.threshold_pct or 0.0, c.current or 0.0),
                              out, f"{stem}_trend.png"))
    if history is not None:
        history.close()
    for fig, name in ((roofline_figure(run, settings.peak_tflops, settings.peak_gbps), "roofline.png"),
                      (profiler_figure(run, baseline), "profiler_metrics.png")):
        if fig is not None:
            paths.append(save(fig, out, name))
    return paths


def _history(settings: Any, run: Run) -> Any:
    """The stored history for trend charts (read-only), when this run was stored in one."""
    if run.run_id is None or not settings.db_path.exists():
        return None
    from perfgate.store import open_store

    return open_store(settings.db_path, readonly=True)
