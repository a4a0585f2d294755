"""Which parser a file needs, by content first and suffix second."""

from __future__ import annotations

import os
from pathlib import Path

from perfgate.errors import ReportFileError
from perfgate.inputs import check_regular_file


def detect(path: Path) -> str:
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise ReportFileError(path, "no such file")
    name = path.name.lower()
    if name.endswith(".qdstrm"):
        raise ReportFileError(path, "a raw Nsight Systems stream (.qdstrm), not a report: nsys could not run its "
                                    "importer (QdstrmImporter; on Linux it needs libdw.so.1 / libelf.so.1). Install "
                                    "them, or convert on a machine with a working nsys")
    check_regular_file(path, ReportFileError)  # a FIFO would block the read below forever
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            head = fh.read(64)
    except OSError as err:
        raise ReportFileError(path, f"cannot be read ({err.strerror or err})") from err
    if head.startswith(b"SQLite format 3\x00"):
        return "nsys-sqlite"
    if name.endswith(".nsys-rep"):
        return "nsys-rep"
    if name.endswith(".ncu-rep") or head.startswith(b"NVR\x00"):
        return "ncu-rep"
    if name.endswith(".csv"):
        return "ncu-csv"
    if name.endswith((".json", ".json.gz")) or head[:2] == b"\x1f\x8b" or head.lstrip()[:1] == b"{":
        return "torch-json"
    if name.endswith((".sqlite", ".db")):
        raise ReportFileError(path, "not a SQLite file (truncated or not an nsys export)")
    raise ReportFileError(path, "unknown report type; expected .nsys-rep, nsys .sqlite, .ncu-rep, ncu CSV "
                                "(--csv --page raw) or torch profiler .json")
