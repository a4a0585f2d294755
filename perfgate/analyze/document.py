"""What `perfgate analyze` reports: one document per file, plus a comparison across files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.analyze.summary import Document, TimelineSummary


def analyze_file(path: Path, with_spans: bool = False) -> Document:
    """Timeline sources (nsys export or report, torch trace) get the four summaries and GPU idle time;
    ncu sources get their launches (metrics in base units) and a diagnosis per launch. Which reader
    takes the file: perfgate/analyze/readers.py."""
    from perfgate.analyze.readers import reader_for

    reader = reader_for(Path(path))
    return reader.summarize(Path(path), reader.kind, with_spans)


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
