"""Read `ncu --import R.ncu-rep --csv --page raw` exports: one row per launch, a units row, auto-scaled
values with thousands separators. Parsed by column name; values brought to ncu_report's base units.

Streamed by launch (`iter_ncu_csv`: csv over the open file, one launch at a time, launches sharing their
metric names, units and index), so a reader that keeps what it needs of each launch (analyze keeps its
diagnosis) holds one launch's values at a time, whatever the file holds; `read_ncu_csv` keeps them all
(and so still refuses past MAX_METRIC_VALUES). The launch checks are parse/ncu_values.py's, shared with
`.ncu-rep`; quirks of hand-edited CSV are one line each: a blank line is skipped, a duplicated column, a
field past the csv module's limit, a launch ID that is not a non-negative integer (`inf`, `1e30`, `-1`) or
appears twice, a number with a decimal comma (`1,5`: another locale's; read as 15 it would be wrong) or a
short row refuse the file.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from perfgate.errors import ReportFileError
from perfgate.inputs import check_regular_file
from perfgate.parse.invariants import INT64_MAX
from perfgate.parse.ncu_values import (
    DURATION,
    Budget,
    check_name,
    check_unit,
    check_value,
    implausible,
    unreadable_duration,
)
from perfgate.parse.records import MetricTable, NcuLaunch
from perfgate.parse.units import LocaleNumber, parse_number, ungrouped, unit_scale

_ID_COLUMNS = {
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
}
_NVTX_ITEM = re.compile(r'"([^"]*)"')
_NUMERIC = re.compile(r"[-+0-9.,eE]+")
MAX_CSV_BYTES = 1 << 30


def read_ncu_csv(path: Path) -> list[NcuLaunch]:
    """Every launch, in memory (at most MAX_METRIC_VALUES values)."""
    path = Path(path)
    budget = Budget(path)
    launches = []
    for launch in iter_ncu_csv(path):
        budget.take(len(launch.metrics))
        launches.append(launch)
    return launches


def iter_ncu_csv(path: Path) -> Iterator[NcuLaunch]:
    """The launches one at a time, each checked as it is read (a bad one is a ReportFileError where it is
    met, so a caller may have used the launches before it); at least one, or one line saying so."""
    path = Path(path)
    st = check_regular_file(path, ReportFileError)
    if st.st_size > MAX_CSV_BYTES:
        raise ReportFileError(path, f"too large ({st.st_size:,} bytes; at most {MAX_CSV_BYTES:,})")
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            count = 0
            for launch in _read(path, fh):
                count += 1
                yield launch
    except UnicodeDecodeError as err:
        raise ReportFileError(path, f"not UTF-8 text (byte {err.start} of a block)") from err
    except csv.Error as err:  # NUL bytes, a field past csv.field_size_limit(), a broken quote
        raise ReportFileError(path, f"not a readable CSV ({err})") from err
    except OSError as err:
        raise ReportFileError(path, f"cannot be read ({err.strerror or err})") from err
    if not count:
        raise ReportFileError(path, "the export holds no kernel launches")


def _rows(fh: TextIO) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields), blank lines skipped (a CSV written by hand or a tool may carry them)."""
    reader = csv.reader(fh)
    for row in reader:
        if row:
            yield reader.line_num, row


class _Columns:
    """What each column of the header is: identity, the NVTX stack, or a metric, with its unit's scale
    (found once per column, not per cell)."""

    def __init__(self, path: Path, header: list[str], units: list[str]) -> None:
        dupes = sorted({h for h in header if header.count(h) > 1}) if len(set(header)) != len(header) else []
        if dupes:
            raise ReportFileError(path, f"column {dupes[0]!r} appears more than once")
        self.width = len(header)
        self.id, self.kernel = header.index("ID"), header.index("Kernel Name")
        self.nvtx = next((j for j, h in enumerate(header) if h.startswith("thread Domain:Push/Pop_Range")), None)
        self.metrics = [
            (j, h, units[j], *unit_scale(units[j]))
            for j, h in enumerate(header)
            if h not in _ID_COLUMNS and ":" not in h
        ]
        for _, name, unit, _, _ in self.metrics:
            check_unit(path, name, unit)


def _read(path: Path, fh: TextIO) -> Iterator[NcuLaunch]:
    rows = _rows(fh)
    first = next(rows, None)
    if first is None:
        raise ReportFileError(path, "the file is empty")
    header = first[1]
    if "Kernel Name" not in header or "ID" not in header:
        raise ReportFileError(
            path,
            "not an ncu CSV export (no 'ID' and 'Kernel Name' columns); "
            "export with: ncu --import R.ncu-rep --csv --page raw",
        )
    units = next(rows, None)
    if units is None or len(units[1]) != len(header) or units[1][header.index("ID")] != "":
        raise ReportFileError(path, "no units row after the header; export with --page raw (not --page details)")
    columns = _Columns(path, header, units[1])
    shared: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...], dict[str, int]]] = {}
    first_line: dict[int, int] = {}  # launch ID -> the line it was first on (two ints a launch)
    for line_no, row in rows:
        if len(row) != columns.width:
            raise ReportFileError(
                path, f"line {line_no} has {len(row)} fields, the header {columns.width} (truncated?)"
            )
        launch = _launch(path, line_no, columns, row, shared)
        if launch.launch_id in first_line:  # ncu numbers each launch once: a copied or merged row
            raise ReportFileError(
                path,
                f"line {line_no}: launch ID {launch.launch_id} appears again (first on line "
                f"{first_line[launch.launch_id]}): a copied row would be counted twice",
            )
        first_line[launch.launch_id] = line_no
        yield launch


def _launch(
    path: Path,
    line_no: int,
    columns: _Columns,
    row: list[str],
    shared: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...], dict[str, int]]],
) -> NcuLaunch:
    launch_id = _launch_id(path, line_no, row[columns.id])
    names: list[str] = []
    values: list[float | str] = []
    units: list[str] = []
    for j, name, unit, factors, base_unit in columns.metrics:
        cell = row[j]
        try:
            number: float | None = float(cell)  # the common case; "4,096", "" and "n/a" take the long way
        except ValueError:
            number = _number(path, line_no, name, cell)
        if (number is None or number - number != 0) and name == DURATION and cell.strip():
            raise unreadable_duration(path, launch_id, cell.strip())
        if number is None:
            if cell.strip() and not _NUMERIC.fullmatch(cell.strip()):
                names.append(name)
                values.append(cell.strip())
                units.append(base_unit)  # as for numbers: "Kbyte" and "byte" columns read the same
            continue  # empty cell: the metric is absent for this launch
        written = number
        for factor in factors:  # as to_base_unit does, one multiplication at a time
            number *= factor
        if number - number != 0:
            if written - written == 0:  # finite as written, past float range once scaled: refused as too large
                check_value(path, launch_id, name, written, unit)
            continue  # NaN/inf as written: ncu could not compute it; absent, never a number
        if implausible(number, base_unit):
            check_value(path, launch_id, name, number, base_unit)
        names.append(name)
        values.append(number + 0.0)  # -0.0 + 0.0 is 0.0: a "-0" cell is never shown as -0 %
        units.append(base_unit)
    key = tuple(names)
    found = shared.get(key)
    if found is None or found[1] != tuple(units):
        found = shared[key] = (key, tuple(units), {n: i for i, n in enumerate(key)})
    nvtx = _nvtx_ranges(row[columns.nvtx]) if columns.nvtx is not None else ()
    return NcuLaunch(
        launch_id=launch_id,
        name=check_name(path, launch_id, row[columns.kernel]),
        metrics=MetricTable(found[0], tuple(values), found[1], found[2]),
        nvtx_ranges=nvtx,
    )


def _number(path: Path, line_no: int, name: str, cell: str) -> float | None:
    try:
        return parse_number(cell)
    except LocaleNumber:
        raise ReportFileError(
            path,
            f"line {line_no}: {name} = {cell.strip()[:40]!r} is not a number as ncu writes one (a decimal "
            f"comma is another locale's format; read here it would be another number): export with LC_ALL=C",
        ) from None


def _launch_id(path: Path, line_no: int, cell: str) -> int:
    try:
        text = ungrouped(cell)
    except LocaleNumber:
        text = "-"  # "1,5" is no launch ID: refused below
    if not (text.isascii() and text.isdigit()) or len(text) > 19 or int(text) > INT64_MAX:
        raise ReportFileError(path, f"line {line_no}: the launch ID {cell[:40]!r} is not a non-negative integer")
    return int(text)


def _nvtx_ranges(cell: str) -> tuple[str, ...]:
    """'1689  "<default domain>:region_add:none:none:none:none:none:none" ' -> ('region_add',).

    Each item is domain:name followed by six payload/colour/message fields; the name itself may contain
    ':' (perfgate's own ranges do), so it is everything between the domain and those six fields."""
    out = []
    for item in _NVTX_ITEM.findall(cell):
        parts = item.split(":")
        if len(parts) >= 8:
            out.append(":".join(parts[1:-6]))
    return tuple(out)
