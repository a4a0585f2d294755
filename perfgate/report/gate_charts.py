"""Charts of a gate run: change per case, trends, sample distributions; with the roofline and profiler
metrics (report/device_charts.py), written together by write_gate_charts.

Each builder returns a Figure, or None when the data is not there. Every case and kernel gets its own
label (case_labels / kernel_labels), and every text is drawn literally (plain_text)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from perfgate.baseline import Baseline
from perfgate.metrics import TIME_METRIC
from perfgate.model import Comparison, GateResult, Run, Verdict
from perfgate.report.device_charts import ROOFLINE_LABELS, profiler_figure, roofline_figure
from perfgate.report.figures import TOP_N, VERDICT_COLOURS, new_figure, plain_text, save
from perfgate.report.format import case_label, case_labels, fmt_change, fmt_pct
from perfgate.store import HistoryPoint

# the device charts (report/device_charts.py) are part of this module's API: write_gate_charts draws them
__all__ = [
    "ROOFLINE_LABELS",
    "TOP_N",
    "change_per_case_figure",
    "chart_stem",
    "charted_cases",
    "clip_limit",
    "distribution_figure",
    "profiler_figure",
    "ranked_case_ids",
    "ranked_time_rows",
    "roofline_figure",
    "time_rows",
    "trend_figure",
    "write_gate_charts",
]

SEVERITY = (Verdict.REGRESSED, Verdict.BELOW_TARGET, Verdict.INCONCLUSIVE, Verdict.IMPROVED)
CLIP_RATIO = 4.0  # a case this many times further off than the next is drawn past a clipped axis
MIN_CLIP_PCT = 2.0


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
