"""Which parser a file needs, by content first and suffix second; one entry point for `perfgate analyze`."""

from __future__ import annotations

from pathlib import Path

from perfgate.errors import ReportFileError
from perfgate.parse.records import NcuLaunch, Timeline

KINDS = ("nsys-rep", "nsys-sqlite", "ncu-rep", "ncu-csv", "torch-json")


def detect(path: Path) -> str:
    path = Path(path)
    if not path.exists():
        raise ReportFileError(path, "no such file")
    if path.is_dir():
        raise ReportFileError(path, "is a directory, not a profiler report")
    name = path.name.lower()
    if name.endswith(".qdstrm"):
        raise ReportFileError(path, "a raw Nsight Systems stream (.qdstrm), not a report: nsys could not run its "
                                    "importer (QdstrmImporter; on Linux it needs libdw.so.1 / libelf.so.1). Install "
                                    "them, or convert on a machine with a working nsys")
    with path.open("rb") as fh:
        head = fh.read(64)
    if head.startswith(b"SQLite format 3\x00"):
        return "nsys-sqlite"
    if name.endswith(".nsys-rep"):
        return "nsys-rep"
    if name.endswith(".ncu-rep"):
        return "ncu-rep"
    if name.endswith(".csv"):
        return "ncu-csv"
    if name.endswith((".json", ".json.gz")) or head[:2] == b"\x1f\x8b" or head.lstrip()[:1] == b"{":
        return "torch-json"
    if name.endswith((".sqlite", ".db")):
        raise ReportFileError(path, "not a SQLite file (truncated or not an nsys export)")
    raise ReportFileError(path, "unknown report type; expected .nsys-rep, nsys .sqlite, .ncu-rep, ncu CSV "
                                "(--csv --page raw) or torch profiler .json")


def load(path: Path, nsys_timeout_s: float = 600.0) -> Timeline | list[NcuLaunch]:
    """Parse any supported report; timelines for nsys/torch, launches for ncu."""
    kind = detect(path)
    if kind == "nsys-rep":
        from perfgate.measure.nsys import export_sqlite
        from perfgate.parse.nsys_sqlite import read_nsys_sqlite

        return read_nsys_sqlite(export_sqlite(Path(path), timeout_s=nsys_timeout_s))
    if kind == "nsys-sqlite":
        from perfgate.parse.nsys_sqlite import read_nsys_sqlite

        return read_nsys_sqlite(Path(path))
    if kind == "ncu-rep":
        from perfgate.parse.ncu_report_file import read_ncu_report

        return read_ncu_report(Path(path))
    if kind == "ncu-csv":
        from perfgate.parse.ncu_csv import read_ncu_csv

        return read_ncu_csv(Path(path))
    from perfgate.parse.torch_trace import read_torch_trace

    return read_torch_trace(Path(path))
