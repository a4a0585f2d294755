"""Shared chart plumbing: Figure objects (no pyplot state), the Agg canvas, verdict colours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

VERDICT_COLOURS = {"regressed": "#d62728", "improved": "#2ca02c", "unchanged": "#7f7f7f", "new": "#1f77b4",
                   "missing": "#bcbd22", "not comparable": "#9467bd", "profile failed": "#ff7f0e"}


def new_figure(width: float = 8.0, height: float = 4.5) -> Any:
    """A Figure on an Agg canvas: safe on headless CI, and no global pyplot state."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig: Any, out_dir: Path, name: str) -> Path:
    """Render to PNG bytes, then replace the file atomically (a reader never sees half a chart)."""
    import io

    from perfgate.atomic import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    path = out_dir / name
    atomic_write_bytes(path, buf.getvalue())
    return path


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
