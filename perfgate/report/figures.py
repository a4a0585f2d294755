"""Shared chart plumbing: Figure objects (no pyplot state), the Agg canvas, verdict colours, labels that
stay unique, and text that is drawn as written (a case id with `$` must not be read as mathtext)."""

from __future__ import annotations

import functools
import io
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from perfgate.errors import require

VERDICT_COLOURS = {
    "regressed": "#d62728",
    "improved": "#2ca02c",
    "unchanged": "#7f7f7f",
    "new": "#1f77b4",
    "missing": "#bcbd22",
    "not comparable": "#9467bd",
    "profile failed": "#ff7f0e",
    "inconclusive": "#e3b505",
    "below target": "#d62728",
}
TOP_N = 25  # cases (or case/kernel pairs) a gate chart names; the rest are folded into one row or counted
F = TypeVar("F", bound=Callable[..., Any])


def plain_text(build: F) -> F:
    """Draw every text of the figure literally: no mathtext, no TeX (ids like `test_x[$n]` broke rendering)."""

    @functools.wraps(build)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        matplotlib: Any = require("matplotlib", "report", "charts")
        with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
            return build(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def plain_log_axis(axis: Any) -> None:
    """Log-axis tick labels as plain numbers: with mathtext off (any case id must render), matplotlib's
    default log labels would print as literal `$\\mathdefault{10^{3}}$`."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    # 2x and 5x minor ticks labelled too: a range inside one decade still gets numbers
    axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:e}"[0] in "25" else ""))


def new_figure(width: float = 8.0, height: float = 4.5) -> Any:
    """A Figure on an Agg canvas: safe on headless CI, and no global pyplot state."""
    require("matplotlib", "report", "charts")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig: Any, out_dir: Path, name: str) -> Path:
    """Render to PNG bytes, then replace the file atomically (a reader never sees half a chart)."""
    from perfgate.atomic import atomic_write_bytes

    buf = io.BytesIO()
    matplotlib: Any = require("matplotlib", "report", "charts")
    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
        fig.savefig(buf, format="png")
    path = out_dir / name
    atomic_write_bytes(path, buf.getvalue())
    return path


def unique_labels(names: Sequence[str], short: Callable[[str], str], longer: Callable[[str], str]) -> list[str]:
    """Short labels where they are unique; a longer form where two would collide; a #n suffix as the last
    resort. Two different kernels or cases never share a bar."""
    first = [short(n) for n in names]
    counts = Counter(first)
    labels = [longer(n) if counts[label] > 1 else label for n, label in zip(names, first)]
    seen: Counter[str] = Counter()
    again = Counter(labels)
    out = []
    for label in labels:
        if again[label] > 1:
            seen[label] += 1
        out.append(f"{label} #{seen[label]}" if again[label] > 1 else label)
    return out


def top_n_with_others(rows: list[tuple[str, float]], n: int, combine: str = "sum") -> list[tuple[str, float]]:
    """Largest n rows by |value|, the rest folded into one 'others (k)' row (summed for totals, the median
    for percentages) so big runs stay readable."""
    import statistics

    rows = sorted(rows, key=lambda r: -abs(r[1]))
    if len(rows) <= n:
        return rows
    rest = [v for _, v in rows[n:]]
    folded = sum(rest) if combine == "sum" else statistics.median(rest)
    return rows[:n] + [(f"others ({len(rest)})", folded)]
