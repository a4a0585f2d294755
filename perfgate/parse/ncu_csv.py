"""Read `ncu --import R.ncu-rep --csv --page raw` exports: one row per launch, a units row, auto-scaled
values with thousands separators. Parsed by column name; values brought to ncu_report's base units."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from perfgate.errors import ReportFileError
from perfgate.inputs import read_bytes
from perfgate.parse.records import NcuLaunch, NcuMetric
from perfgate.parse.units import parse_number, to_base_unit

_ID_COLUMNS = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
               "Grid Size", "Device", "CC"}
_NVTX_ITEM = re.compile(r'"([^"]*)"')


def read_ncu_csv(path: Path) -> list[NcuLaunch]:
    path = Path(path)
    try:
        text = read_bytes(path, ReportFileError).decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ReportFileError(path, f"not UTF-8 text (byte {err.start})") from err
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise ReportFileError(path, "the file is empty")
    header = rows[0]
    if "Kernel Name" not in header or "ID" not in header:
        raise ReportFileError(path, "not an ncu CSV export (no 'ID' and 'Kernel Name' columns); "
                                    "export with: ncu --import R.ncu-rep --csv --page raw")
    if len(rows) < 2 or rows[1][header.index("ID")] != "":
        raise ReportFileError(path, "no units row after the header; export with --page raw (not --page details)")
    units = rows[1]
    launches = []
    for line_no, row in enumerate(rows[2:], start=3):
        if len(row) != len(header):
            raise ReportFileError(path, f"line {line_no} has {len(row)} fields, the header {len(header)} (truncated?)")
        launches.append(_launch(header, units, row))
    if not launches:
        raise ReportFileError(path, "the export holds no kernel launches")
    return launches


def _launch(header: list[str], units: list[str], row: list[str]) -> NcuLaunch:
    metrics: dict[str, NcuMetric] = {}
    nvtx: tuple[str, ...] = ()
    for name, unit, cell in zip(header, units, row):
        if name.startswith("thread Domain:Push/Pop_Range"):
            nvtx = _nvtx_ranges(cell)
            continue
        if name in _ID_COLUMNS or ":" in name:
            continue
        number = parse_number(cell)
        if number is None:
            if cell.strip() and not _looks_numeric(cell):
                metrics[name] = NcuMetric(cell.strip(), unit)
            continue  # empty cell: the metric is absent for this launch
        value, base_unit = to_base_unit(number, unit)
        metrics[name] = NcuMetric(value, base_unit)
    launch_id = int(parse_number(row[header.index("ID")]) or 0)
    return NcuLaunch(launch_id=launch_id, name=row[header.index("Kernel Name")], metrics=metrics, nvtx_ranges=nvtx)


def _looks_numeric(cell: str) -> bool:
    return bool(re.fullmatch(r"[-+0-9.,eE]+", cell.strip()))


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
