"""Charts of a gate run: change per case, trends, sample distributions, roofline, profiler metrics.

Each builder returns a Figure, or None when the data is not there. Every case and kernel gets its own
label (case_labels / kernel_labels), and every text is drawn literally (plain_text)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from perfgate.baseline import Baseline
from perfgate.gate.bottleneck import DEVICE_PEAKS
from perfgate.metrics import TIME_METRIC
from perfgate.model import Comparison, GateResult, Metric, Run, Verdict
from perfgate.report.analyze_charts import kernel_labels
from perfgate.report.figures import VERDICT_COLOURS, new_figure, plain_log_axis, plain_text, save
from perfgate.report.format import case_label, case_labels, fmt_change, fmt_pct
from perfgate.store import HistoryPoint

TOP_N = 25
ROOFLINE_LABELS = 12  # cases named on the roofline; the rest are points
SEVERITY = (Verdict.REGRESSED, Verdict.BELOW_TARGET, Verdict.INCONCLUSIVE, Verdict.IMPROVED)
CLIP_RATIO = 4.0  # a case this many times further off than the next is drawn past a clipped axis
MIN_CLIP_PCT = 2.0
ACHIEVED_OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCC = "sm__maximum_warps_per_active_cycle_pct"
DRAM_BW = "dram__bytes.sum.per_second"


def time_rows(gate: GateResult) -> list[Comparison]:
    return [c for c in gate.comparisons if c.metric == TIME_METRIC and c.change_pct is not None]


def _severity(c: Comparison) -> tuple[int, float]:
    rank = SEVERITY.index(c.verdict) if c.verdict in SEVERITY else len(SEVERITY)
    return rank, -abs(c.change_pct or 0.0)


def ranked_time_rows(gate: GateResult) -> list[Comparison]:
    """Time rows, what fails first, then inconclusive, improved and the rest; each by |change|."""
    return sorted(time_rows(gate), key=_severity)


def ranked_case_ids(gate: GateResult | None) -> list[str]:
    """Case ids in the order charts give them room: by their time verdict's severity, then |change|."""
    return [c.case_id for c in ranked_time_rows(gate)] if gate is not None else []


def clip_limit(extents: Sequence[float]) -> float | None:
    """Where the change axis stops when a few cases are far off the rest, or None (draw to the data).

    `extents` are how far each case reaches (its |change| or its threshold band, whichever is wider).
    The largest jump between consecutive extents (sorted) of at least CLIP_RATIO, with no more than a
    quarter of the cases (at least one) above it, puts those cases past the edge: a +3000% case no longer
    shrinks a +4% regression to a sliver. The limit leaves room around the cases it keeps."""
    values = sorted(abs(v) for v in extents)
    best: tuple[float, int] | None = None
    for i in range(max(1, len(values) - max(1, len(values) // 4)), len(values)):
        ratio = values[i] / max(values[i - 1], MIN_CLIP_PCT)
        if ratio >= CLIP_RATIO and (best is None or ratio > best[0]):
            best = (ratio, i)
    return None if best is None else 1.3 * max(values[best[1] - 1], MIN_CLIP_PCT)


@plain_text
def change_per_case_figure(gate: GateResult, top_n: int = TOP_N) -> Any | None:
    """Change of each case's time, its confidence interval, the band it must leave to count, coloured by
    verdict; failing cases first, then by |change| (the rest folded into one row). When a few cases are
    far off, the axis stops short of them and their bars end at the edge, labelled with their value."""
    rows = ranked_time_rows(gate)
    if not rows:
        return None
    shown, rest = rows[:top_n], rows[top_n:]
    labels = case_labels([c.case_id for c in shown])
    fig = new_figure(9, max(2.5, 0.34 * (len(shown) + bool(rest)) + 1.2))
    ax = fig.add_subplot()
    # bottom to top: the folded rest, then the shown cases with the most severe at the top
    base = 1 if rest else 0
    ys = [base + len(shown) - 1 - i for i in range(len(shown))]
    limit = clip_limit([max(abs(c.change_pct or 0.0), c.threshold_pct or 0.0) for c in shown])
    for y, c in zip(ys, shown):
        if c.threshold_pct is not None:
            band = _clipped(c.threshold_pct, limit)
            ax.barh(y, 2 * band, left=-band, height=0.9, color="#e8e8e8", zorder=0)
    widths = [_clipped(c.change_pct or 0.0, limit) for c in shown]
    bars = ax.barh(
        ys, widths, height=0.6, zorder=2, color=[VERDICT_COLOURS.get(c.verdict.value, "#7f7f7f") for c in shown]
    )
    for bar, w, c in zip(bars.patches, widths, shown):
        if w != (c.change_pct or 0.0):
            bar.set_hatch("//")
    for y, c in zip(ys, shown):
        if c.ci_low_pct is not None and c.ci_high_pct is not None:
            ax.plot(
                [_clipped(c.ci_low_pct, limit), _clipped(c.ci_high_pct, limit)],
                [y, y],
                color="black",
                linewidth=1.2,
                zorder=3,
            )
    ticks, names = ys[::-1], labels[::-1]
    if rest:
        import statistics

        ax.barh(
            [0], [_clipped(statistics.median(c.change_pct or 0.0 for c in rest), limit)], height=0.6, color="#bbbbbb"
        )
        ticks, names = [0, *ticks], [f"others ({len(rest)}, median)", *names]
    ax.set_yticks(ticks, names, fontsize="x-small")
    ax.axvline(0, color="black", linewidth=0.8)
    xlabel = "change in median time vs baseline (%); grey: the case's threshold band; line: 95% CI"
    if limit is not None:
        _label_clipped(ax, ys, widths, shown, limit)
        xlabel += f"\naxis clipped at ±{fmt_pct(limit)}%: hatched bars run past it, labelled with their change"
    ax.set_xlabel(xlabel)
    ax.set_title("Time change per case (positive = slower)")
    return fig


def _clipped(value: float, limit: float | None) -> float:
    return value if limit is None else max(-limit, min(limit, value))


def _label_clipped(
    ax: Any, ys: Sequence[int], widths: Sequence[float], rows: Sequence[Comparison], limit: float
) -> None:
    ax.set_xlim(-1.15 * limit, 1.15 * limit)
    for y, w, c in zip(ys, widths, rows):
        change = c.change_pct or 0.0
        if w != change:
            ax.annotate(
                f"{fmt_change(change)} ▸" if change > 0 else f"◂ {fmt_change(change)}",
                (w, y),
                xytext=(-4 if change > 0 else 4, 0),
                textcoords="offset points",
                va="center",
                ha="right" if change > 0 else "left",
                fontsize="x-small",
                fontweight="bold",
                color="white",
                zorder=4,
            )


def _point_label(p: HistoryPoint) -> str:
    return f"{p.git_commit[:7] or '-'}\n{p.started_at[:10]}"


@plain_text
def trend_figure(
    case_id: str, history: Sequence[HistoryPoint], baseline_ms: float, threshold_pct: float, current_ms: float
) -> Any | None:
    """Median per stored run, by commit and date, with the baseline and its threshold band."""
    if not history:
        return None
    fig = new_figure(8, 3.8)
    ax = fig.add_subplot()
    xs = list(range(len(history)))
    ax.plot(xs, [h.median_ms for h in history], marker="o", color="#1f77b4", label="median (history)")
    ax.fill_between(
        xs, [h.q1_ms for h in history], [h.q3_ms for h in history], color="#1f77b4", alpha=0.15, label="q1-q3"
    )
    ax.axhline(baseline_ms, color="black", linestyle="--", label="baseline")
    ax.axhspan(
        baseline_ms * (1 - threshold_pct / 100),
        baseline_ms * (1 + threshold_pct / 100),
        color="#cccccc",
        alpha=0.5,
        label=f"threshold ±{threshold_pct:.2g}%",
    )
    ax.plot([xs[-1]], [current_ms], marker="*", markersize=14, color="#d62728", linestyle="none", label="this run")
    step = max(1, len(xs) // 12)
    ax.set_xticks(xs[::step], [_point_label(h) for h in history][::step], fontsize="xx-small")
    ax.set_xlabel("run (commit, date)")
    ax.set_ylabel("median time (ms)")
    ax.set_title(f"Trend: {case_label(case_id, 70)}")
    ax.legend(loc="best", fontsize="x-small")
    return fig


@plain_text
def distribution_figure(case_id: str, baseline_ms: tuple[float, ...], current_ms: tuple[float, ...]) -> Any | None:
    if not baseline_ms or not current_ms:
        return None
    fig = new_figure(5, 3.5)
    ax = fig.add_subplot()
    ax.boxplot([list(baseline_ms), list(current_ms)], tick_labels=["baseline", "this run"], showfliers=True)
    ax.set_ylabel("time per call (ms)")
    ax.set_title(f"Samples: {case_label(case_id, 40)}")
    return fig


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


def chart_stem(case_id: str) -> str:
    """A case's charts' file name stem: its test name as safe characters (letters, digits, `.`, `_`, `-`), at
    most 60 of them, and 8 hex digits of its id's hash, so two cases never share a file:
    `kernels/tests/test_perf.py::test_softmax[bf16]` -> `test_softmax-bf16-3f2a9c1d`."""
    name = case_id.rsplit("::", 1)[-1] if "::" in case_id else case_id.rsplit("/", 1)[-1]
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:60].rstrip("-.") or "case"
    return f"{safe}-{hashlib.sha256(case_id.encode()).hexdigest()[:8]}"


def charted_cases(gate: GateResult) -> list[Comparison]:
    """The changed cases that get a distribution and a trend chart of their own."""
    changed = [c for c in ranked_time_rows(gate) if c.verdict in SEVERITY]  # the largest regressions first
    return changed[:TOP_N]


def write_gate_charts(
    gate: GateResult,
    run: Run,
    out: Path,
    baseline: Baseline | None,
    history: Mapping[str, Sequence[HistoryPoint]],
    peak_tflops: float | None = None,
    peak_gbps: float | None = None,
) -> list[Path]:
    """Write the PNGs worth drawing into `out`; `history` holds the stored points of the charted cases
    (charted_cases) for their trends. Returns the paths for the Markdown links."""
    figures: list[tuple[Any, str]] = [(change_per_case_figure(gate), "change_per_case.png")]
    samples = {r.case_id: r.samples_ms for r in run.results}
    for c in charted_cases(gate):
        if baseline and c.case_id in baseline.cases:
            figures.append(
                (
                    distribution_figure(c.case_id, baseline.cases[c.case_id].samples_ms, samples[c.case_id]),
                    f"{chart_stem(c.case_id)}_distribution.png",
                )
            )
        if c.case_id in history:
            figures.append(
                (
                    trend_figure(
                        c.case_id, history[c.case_id], c.baseline or 0.0, c.threshold_pct or 0.0, c.current or 0.0
                    ),
                    f"{chart_stem(c.case_id)}_trend.png",
                )
            )
    ranked = ranked_case_ids(gate)
    figures += [
        (roofline_figure(run, peak_tflops, peak_gbps, ranked), "roofline.png"),
        (profiler_figure(run, baseline, ranked), "profiler_metrics.png"),
    ]
    return [save(fig, out, name) for fig, name in figures if fig is not None]
