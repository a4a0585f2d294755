"""What `perfgate analyze` reports: one document per file, plus a comparison across files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.analyze.ncu_diagnosis import diagnose
from perfgate.analyze.summary import Document, LaunchRow, NcuSummary, TimelineSummary
from perfgate.errors import ReportFileError
from perfgate.parse.invariants import OutOfRange
from perfgate.parse.load import detect
from perfgate.parse.records import NcuLaunch


def analyze_file(path: Path, with_spans: bool = False) -> Document:
    """Timeline sources (nsys export or report, torch trace) get the four summaries and GPU idle time;
    ncu sources get their launches (metrics in base units) and a diagnosis per launch."""
    kind = detect(path)
    if kind == "nsys-sqlite":
        from perfgate.analyze.nsys_summary import summarize_nsys

        return summarize_nsys(path, kind, with_spans)
    if kind == "nsys-rep":
        return _with_source(_summarize_report(Path(path), with_spans), path)
    if kind == "torch-json":
        from perfgate.analyze.torch_summary import summarize_torch

        return summarize_torch(path, kind, with_spans)
    if kind == "ncu-rep":
        from perfgate.parse.ncu_report_file import read_ncu_report

        return ncu_summary(path, kind, read_ncu_report(path))
    from perfgate.parse.ncu_csv import read_ncu_csv

    return ncu_summary(path, kind, read_ncu_csv(path))


def _summarize_report(path: Path, with_spans: bool) -> TimelineSummary:
    """An .nsys-rep through `nsys export`, into a private temporary directory: the user's directory may
    hold an X.sqlite of their own beside X.nsys-rep, and analyze never writes over a user's file."""
    import tempfile

    from perfgate.analyze.nsys_summary import summarize_nsys
    from perfgate.measure.nsys import export_sqlite

    with tempfile.TemporaryDirectory(prefix="perfgate-export-") as tmp:
        sqlite = export_sqlite(path, target=Path(tmp) / (path.stem + ".sqlite"))
        return summarize_nsys(sqlite, "nsys-rep", with_spans)


def _with_source(summary: TimelineSummary, path: Path) -> TimelineSummary:
    from dataclasses import replace

    return replace(summary, source=str(path))


def ncu_summary(path: Path, kind: str, launches: list[NcuLaunch]) -> NcuSummary:
    rows = tuple(LaunchRow(id=launch.launch_id, name=launch.name, nvtx=launch.nvtx_ranges, table=launch.metrics)
                 for launch in launches)
    try:
        diagnosis = tuple(diagnose(lc) for lc in launches)
    except OutOfRange as err:
        raise ReportFileError(path, str(err)) from err
    return NcuSummary(source=str(path), type=kind, launches=rows, diagnosis=diagnosis)


@dataclass(frozen=True)
class ComparisonRow:
    name: str
    total_ns_by_file: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "total_ns_by_file": dict(self.total_ns_by_file)}


def comparison(documents: list[Document]) -> list[ComparisonRow]:
    """Across files: per kernel name, time per file (timeline: total_ns; ncu: duration of its launches).
    Files are named by their index and name, so two files with one name stay apart."""
    table: dict[str, dict[str, float]] = {}
    names = [Path(doc.source).name for doc in documents]
    for i, doc in enumerate(documents):
        src = f"{i}:{names[i]}" if names.count(names[i]) > 1 else names[i]
        if isinstance(doc, TimelineSummary):
            for k in doc.kernels:
                table.setdefault(k.name, {})[src] = float(k.stats.total_ns)
        else:
            for d in doc.diagnosis:
                if d.duration_ns is not None:
                    row = table.setdefault(d.name, {})
                    row[src] = row.get(src, 0.0) + d.duration_ns
    return [ComparisonRow(name, by_file) for name, by_file in sorted(table.items())]
