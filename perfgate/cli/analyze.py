"""`perfgate analyze FILE...`: what any nsys / ncu / torch-profiler file says, as Markdown or strict JSON."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from perfgate.codec import finite_or_none


def analyze(args: argparse.Namespace) -> int:
    from perfgate.analyze.document import analyze_file, comparison
    from perfgate.report.analyze_markdown import render_analysis_markdown
    from perfgate.report.publish import write_text

    want_charts = bool(args.output_dir) and not args.no_charts
    documents = [analyze_file(f, with_spans=want_charts) for f in _progress(args.files)]
    table = comparison(documents)
    charts: list[str] = []
    files = [d.as_dict() for d in documents]
    rows = [r.as_dict() for r in table]
    if args.output_dir:
        if want_charts:
            from perfgate.report.analyze_charts import write_analysis_charts

            charts = write_analysis_charts(documents, args.output_dir)
        write_text(args.output_dir / "analysis.json", _json({"files": files, "comparison": rows}))
        write_text(args.output_dir / "report.md", render_analysis_markdown(documents, table, charts))
    if args.format == "json":
        print(_json(files[0] if len(files) == 1 else {"files": files, "comparison": rows}), end="")
    else:
        print(render_analysis_markdown(documents, table, charts), end="")
    return 0


def _json(doc: object) -> str:
    """Strict JSON: ncu can report NaN for a metric it could not compute; that is null here."""
    return json.dumps(finite_or_none(doc), indent=2, default=str, allow_nan=False) + "\n"


def _progress(files: list[Path]) -> Iterator[Path]:
    """A rich progress bar on a terminal; silent when piped or under CI."""
    if len(files) < 2 or not sys.stderr.isatty() or os.environ.get("CI"):
        yield from files
        return
    try:
        from rich.progress import track
    except ImportError:
        yield from files
        return
    yield from track(files, description="analyzing", transient=True)
