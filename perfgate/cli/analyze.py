"""`perfgate analyze FILE...`: what any nsys / ncu / torch-profiler file says, as Markdown or strict JSON."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfgate.analyze.streamed_json import write_json
from perfgate.atomic import staged_dir

if TYPE_CHECKING:
    from perfgate.analyze.document import ComparisonRow
    from perfgate.analyze.summary import Document


def analyze(args: argparse.Namespace) -> int:
    from perfgate.analyze.document import analyze_file, comparison
    from perfgate.report.analyze_markdown import render_analysis_markdown
    from perfgate.report.publish import write_text

    want_charts = bool(args.output_dir) and not args.no_charts
    with contextlib.ExitStack() as stack:
        # a directory that cannot be written fails before the reading; its files appear all together or not at all
        out = (
            stack.enter_context(staged_dir(args.output_dir, f"--output-dir {args.output_dir}"))
            if args.output_dir
            else None
        )
        documents = [analyze_file(f, with_spans=want_charts) for f in _progress(args.files)]
        table = comparison(documents)
        charts: list[str] = []
        if out is not None:
            if want_charts:
                from perfgate.report.analyze_charts import write_analysis_charts

                charts = write_analysis_charts(documents, out)
            write_json_file(out / "analysis.json", _doc(documents, table, single=False))
            write_text(out / "report.md", render_analysis_markdown(documents, table, charts))
    if args.format == "json":
        write_json(_doc(documents, table, single=True), sys.stdout.write)
    else:
        print(render_analysis_markdown(documents, table, charts), end="")
    return 0


def _doc(documents: list[Document], table: list[ComparisonRow], single: bool) -> Any:
    """The documented JSON: one file's document, or every file's and the comparison. Launch tables are
    iterators (analyze/streamed_json.py writes them a launch at a time)."""
    if single and len(documents) == 1:
        return documents[0].as_stream()
    return {"files": [d.as_stream() for d in documents], "comparison": [r.as_dict() for r in table]}


def write_json_file(path: Path, doc: Any) -> None:
    """Atomically, as publish.write_text does, but in pieces: the text of a large analysis is never one string."""
    from perfgate.atomic import atomic_write_stream
    from perfgate.errors import PerfgateError

    try:
        atomic_write_stream(path, lambda fh: write_json(doc, lambda piece: fh.write(piece.encode("utf-8"))))
    except OSError as err:
        raise PerfgateError(f"perfgate: cannot write {path}: {err.strerror or err}") from err


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
