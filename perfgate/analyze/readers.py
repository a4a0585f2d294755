"""The readers `perfgate analyze` knows, as one registry: each says which files it takes (a sniff of the
name and first bytes) and how it summarises one. A new format is one entry here, nothing else.

Order matters: content first (an SQLite or ncu-rep header wins over any suffix), suffix second, so a
`.json` that is really an nsys export is read as one."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from perfgate.analyze.ncu_diagnosis import diagnose
from perfgate.analyze.summary import Document, LaunchRow, NcuSummary
from perfgate.errors import ReportFileError
from perfgate.parse.invariants import OutOfRange
from perfgate.parse.load import file_head
from perfgate.parse.records import NcuLaunch


@dataclass(frozen=True)
class Reader:
    kind: str  # recorded in the document ("nsys-sqlite", ...)
    describes: str  # for the unknown-type message
    sniff: Callable[[str, bytes], bool]  # (lower-case file name, first bytes) -> takes it
    summarize: Callable[[Path, str, bool], Document]  # (path, kind, with_spans)


def _nsys_sqlite(path: Path, kind: str, with_spans: bool) -> Document:
    from perfgate.analyze.nsys_summary import summarize_nsys

    return summarize_nsys(path, kind, with_spans)


def _nsys_rep(path: Path, kind: str, with_spans: bool) -> Document:
    """An .nsys-rep through `nsys export`, into a private temporary directory: the user's directory may
    hold an X.sqlite of their own beside X.nsys-rep, and analyze never writes over a user's file."""
    import tempfile
    from dataclasses import replace

    from perfgate.analyze.nsys_summary import summarize_nsys
    from perfgate.measure.nsys import export_sqlite

    with tempfile.TemporaryDirectory(prefix="perfgate-export-") as tmp:
        sqlite = export_sqlite(path, target=Path(tmp) / (path.stem + ".sqlite"))
        return replace(summarize_nsys(sqlite, kind, with_spans), source=str(path))


def _torch(path: Path, kind: str, with_spans: bool) -> Document:
    from perfgate.analyze.torch_summary import summarize_torch

    return summarize_torch(path, kind, with_spans)


def _ncu_rep(path: Path, kind: str, with_spans: bool) -> Document:
    from perfgate.parse.ncu_report_file import read_ncu_report

    return ncu_summary(path, kind, read_ncu_report(path))


def _ncu_csv(path: Path, kind: str, with_spans: bool) -> Document:
    from perfgate.parse.ncu_csv import iter_ncu_csv

    rows = StreamedLaunches(path)
    return ncu_summary(path, kind, iter_ncu_csv(path), rows)


class StreamedLaunches:
    """An ncu CSV's launches as rows, read from the file again each time they are iterated (the JSON
    writer's pass, one launch at a time): the summary keeps each launch's diagnosis, never every launch's
    values. The file must be the one the diagnosis was read from (its size and modification time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stamp = self._stamp()

    def _stamp(self) -> tuple[int, int]:
        st = self.path.stat()
        return st.st_size, st.st_mtime_ns

    def __iter__(self) -> Iterator[LaunchRow]:
        from perfgate.parse.ncu_csv import iter_ncu_csv

        if self._stamp() != self.stamp:
            raise ReportFileError(self.path, "changed while it was being analyzed")
        for launch in iter_ncu_csv(self.path):
            yield _row(launch)


def _row(launch: NcuLaunch) -> LaunchRow:
    return LaunchRow(id=launch.launch_id, name=launch.name, nvtx=launch.nvtx_ranges, table=launch.metrics)


def ncu_summary(
    path: Path, kind: str, launches: Iterable[NcuLaunch], rows: Iterable[LaunchRow] | None = None
) -> NcuSummary:
    """The summary of the launches, read once: each one's diagnosis kept, and its row too unless `rows`
    gives them again when they are written (StreamedLaunches)."""
    kept: list[LaunchRow] = []
    diagnosis = []
    try:
        for launch in launches:
            diagnosis.append(diagnose(launch))
            if rows is None:
                kept.append(_row(launch))
    except OutOfRange as err:
        raise ReportFileError(path, str(err)) from err
    return NcuSummary(
        source=str(path), type=kind, launches=tuple(kept) if rows is None else rows, diagnosis=tuple(diagnosis)
    )


READERS: tuple[Reader, ...] = (
    Reader("nsys-sqlite", "nsys .sqlite", lambda name, head: head.startswith(b"SQLite format 3\x00"), _nsys_sqlite),
    Reader("nsys-rep", ".nsys-rep", lambda name, head: name.endswith(".nsys-rep"), _nsys_rep),
    Reader(
        "ncu-rep", ".ncu-rep", lambda name, head: name.endswith(".ncu-rep") or head.startswith(b"NVR\x00"), _ncu_rep
    ),
    Reader("ncu-csv", "ncu CSV (--csv --page raw)", lambda name, head: name.endswith(".csv"), _ncu_csv),
    Reader(
        "torch-json",
        "torch profiler .json",
        lambda name, head: name.endswith((".json", ".json.gz")) or head[:2] == b"\x1f\x8b" or head.lstrip()[:1] == b"{",
        _torch,
    ),
)


def reader_for(path: Path, readers: tuple[Reader, ...] = READERS) -> Reader:
    """The first reader that takes the file, or one line naming what was expected."""
    path = Path(path)
    head = file_head(path)
    name = path.name.lower()
    for reader in readers:
        if reader.sniff(name, head):
            return reader
    if name.endswith((".sqlite", ".db")):
        raise ReportFileError(path, "not a SQLite file (truncated or not an nsys export)")
    expected = ", ".join(r.describes for r in readers)
    raise ReportFileError(path, f"unknown report type; expected {expected}")
