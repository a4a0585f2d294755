"""The first bytes of a report file, read safely: what the analyze readers sniff to pick a parser
(perfgate/analyze/readers.py holds the readers and their order: content first, suffix second)."""

from __future__ import annotations

import os
from pathlib import Path

from perfgate.errors import ReportFileError
from perfgate.inputs import check_regular_file

HEAD_BYTES = 64


def file_head(path: Path) -> bytes:
    """The first bytes of a regular file, or one line saying why it cannot be a report (missing, a raw
    nsys stream, a FIFO or device that would block, unreadable)."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise ReportFileError(path, "no such file")
    if path.name.lower().endswith(".qdstrm"):
        raise ReportFileError(
            path,
            "a raw Nsight Systems stream (.qdstrm), not a report: nsys could not run its "
            "importer (QdstrmImporter; on Linux it needs libdw.so.1 / libelf.so.1). Install "
            "them, or convert on a machine with a working nsys",
        )
    check_regular_file(path, ReportFileError)  # a FIFO would block the read below forever
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError as err:
        raise ReportFileError(path, f"cannot be read ({err.strerror or err})") from err
