"""`perfgate analyze` on an nsys export: the four `nsys stats` summaries and GPU idle time, aggregated where
it is cheapest. SQLite groups the rows and hands each group's durations over as one packed string; numpy
turns that into an array and computes the statistics. No Python object per row, so a million-kernel
capture takes seconds, and memory grows with the number of distinct kernels and API calls, not rows.
"""

from __future__ import annotations

import sqlite3
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from perfgate.analyze.summary import (
    ApiRow,
    IdleSummary,
    IntArray,
    KernelRow,
    MemoryRow,
    NvtxRow,
    TimelineSummary,
    duration_stats,
    idle_summary,
)
from perfgate.errors import ReportFileError
from perfgate.parse.nsys_sqlite import (
    KERNEL_TABLE,
    MEMCPY_TABLE,
    MEMSET_TABLE,
    NVTX_TABLE,
    PUSH_POP,
    RUNTIME_TABLE,
    START_END,
    NsysExport,
    api_name,
)

SPAN_CHART_TOP = 12
SPANS_PER_KERNEL = 20_000  # a chart cannot show more bars than this per row anyway
_OK_TIMES = "typeof(start) = 'integer' AND typeof(end) = 'integer'"


def summarize_nsys(path: Path, type_label: str, with_spans: bool = False) -> TimelineSummary:
    with NsysExport(path) as ex:
        try:
            kernels, spans = _kernels(ex, with_spans)
            return TimelineSummary(source=str(path), type=type_label, kind="nsys", gpu=ex.gpu_name,
                                   meta={"export_schema_version": ex.version}, kernels=kernels,
                                   memory=_memory(ex), api=_api(ex), nvtx=_nvtx(ex), gpu_idle=_idle(ex), spans=spans)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
            raise ReportFileError(path, f"SQLite error while reading the export ({err})") from err


def _unpack(ex: NsysExport, packed: Any, expected: int, what: str) -> IntArray:
    """The comma-joined integers SQLite made of one group; every row must have come through."""
    if expected == 0:
        return np.zeros(0, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy only warns when it stops early on a non-number
        try:
            values: IntArray = np.fromstring(str(packed), dtype=np.int64, sep=",")
        except (ValueError, DeprecationWarning) as err:
            raise ReportFileError(ex.path, f"{what}: non-integer start/end values") from err
    if values.size != expected:
        raise ReportFileError(ex.path, f"{what}: non-integer start/end values")
    return values


def _check_times(ex: NsysExport, table: str, usable: int, total: int) -> None:
    if usable != total:
        raise ReportFileError(ex.path, f"{table}: {total - usable} row(s) with missing or non-integer start/end")


def _kernels(ex: NsysExport, with_spans: bool) -> tuple[tuple[KernelRow, ...], dict[str, tuple[IntArray, IntArray]]]:
    regs = "max(registersPerThread)" if "registersPerThread" in ex.columns(KERNEL_TABLE) else "NULL"
    rows = ex.con.execute(
        f"SELECT demangledName, count(*), sum({_OK_TIMES}), {regs}, group_concat(end - start) "
        f"FROM {KERNEL_TABLE} GROUP BY demangledName").fetchall()
    names = ex.strings({r[0] for r in rows})
    grouped: dict[str, list[IntArray]] = defaultdict(list)
    registers: dict[str, int | None] = {}
    ids: dict[str, list[int]] = defaultdict(list)
    for name_id, count, ok, reg, packed in rows:
        _check_times(ex, KERNEL_TABLE, ok, count)
        name = names.get(name_id, str(name_id))
        grouped[name].append(_unpack(ex, packed, count, KERNEL_TABLE))
        registers[name] = max((r for r in (registers.get(name), reg) if isinstance(r, int)), default=None)
        ids[name].append(name_id)
    stats = {name: duration_stats(np.concatenate(parts)) for name, parts in grouped.items()}
    total = sum(s.total_ns for s in stats.values()) or 1
    out = tuple(sorted((KernelRow(n, s, 100.0 * s.total_ns / total, registers[n]) for n, s in stats.items()),
                       key=lambda k: (-k.stats.total_ns, k.name)))
    spans = _spans(ex, [(k.name, ids[k.name]) for k in out[:SPAN_CHART_TOP]]) if with_spans else {}
    return out, spans


def _spans(ex: NsysExport, top: list[tuple[str, list[int]]]) -> dict[str, tuple[IntArray, IntArray]]:
    out = {}
    for name, name_ids in top:
        marks = ",".join("?" * len(name_ids))
        starts, ends, n = ex.con.execute(
            f"SELECT group_concat(start), group_concat(end), count(*) FROM (SELECT start, end FROM {KERNEL_TABLE} "
            f"WHERE demangledName IN ({marks}) ORDER BY start)", name_ids).fetchone()
        s, e = _unpack(ex, starts, n, KERNEL_TABLE), _unpack(ex, ends, n, KERNEL_TABLE)
        step = max(1, s.size // SPANS_PER_KERNEL)
        out[name] = (s[::step], e[::step])
    return out


def _memory(ex: NsysExport) -> tuple[MemoryRow, ...]:
    rows: list[MemoryRow] = []
    if ex.has(MEMCPY_TABLE):
        kinds = ex.copy_kinds()
        for kind, count, ok, nbytes, packed in ex.con.execute(
                f"SELECT copyKind, count(*), sum({_OK_TIMES}), sum(CAST(bytes AS INTEGER)), group_concat(end - start) "
                f"FROM {MEMCPY_TABLE} GROUP BY copyKind"):
            _check_times(ex, MEMCPY_TABLE, ok, count)
            rows.append(MemoryRow(kinds.get(kind, f"copy kind {kind}"),
                                  duration_stats(_unpack(ex, packed, count, MEMCPY_TABLE)), int(nbytes or 0)))
    if ex.has(MEMSET_TABLE):
        count, ok, nbytes, packed = ex.con.execute(
            f"SELECT count(*), sum({_OK_TIMES}), sum(CAST(bytes AS INTEGER)), group_concat(end - start) "
            f"FROM {MEMSET_TABLE}").fetchone()
        if count:
            _check_times(ex, MEMSET_TABLE, ok, count)
            rows.append(MemoryRow("memset", duration_stats(_unpack(ex, packed, count, MEMSET_TABLE)), int(nbytes or 0)))
    return tuple(sorted(rows, key=lambda m: (-m.stats.total_ns, m.kind)))


def _api(ex: NsysExport) -> tuple[ApiRow, ...]:
    if not ex.has(RUNTIME_TABLE):
        return ()
    rows = ex.con.execute(f"SELECT nameId, count(*), sum({_OK_TIMES}), group_concat(end - start) "
                          f"FROM {RUNTIME_TABLE} GROUP BY nameId").fetchall()
    names = ex.strings({r[0] for r in rows})
    grouped: dict[str, list[IntArray]] = defaultdict(list)
    for name_id, count, ok, packed in rows:
        _check_times(ex, RUNTIME_TABLE, ok, count)
        grouped[api_name(names.get(name_id, str(name_id)))].append(_unpack(ex, packed, count, RUNTIME_TABLE))
    out = (ApiRow(name, duration_stats(np.concatenate(parts))) for name, parts in grouped.items())
    return tuple(sorted(out, key=lambda a: (-a.stats.total_ns, a.name)))


def _nvtx(ex: NsysExport) -> tuple[NvtxRow, ...]:
    if not ex.has(NVTX_TABLE):
        return ()
    join = "LEFT JOIN StringIds s ON s.id = n.textId" if ex.has("StringIds") else ""
    text = "coalesce(n.text, s.value)" if join else "n.text"
    grouped: dict[tuple[str, str], list[IntArray]] = defaultdict(list)
    for label, event_type, count, packed in ex.con.execute(
            f"SELECT {text}, n.eventType, count(*), group_concat(n.end - n.start) FROM {NVTX_TABLE} n {join} "
            f"WHERE n.eventType IN ({PUSH_POP}, {START_END}) AND typeof(n.start) = 'integer' "
            f"AND typeof(n.end) = 'integer' GROUP BY 1, 2"):
        style = "PushPop" if event_type == PUSH_POP else "StartEnd"
        grouped[(str(label) if label is not None else "", style)].append(_unpack(ex, packed, count, NVTX_TABLE))
    out = (NvtxRow(text_, style, duration_stats(np.concatenate(parts))) for (text_, style), parts in grouped.items())
    return tuple(sorted(out, key=lambda r: (-r.stats.total_ns, r.range)))


def _idle(ex: NsysExport) -> IdleSummary:
    starts, ends = [], []
    for table in (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE):
        if not ex.has(table):
            continue
        count, ok, s, e = ex.con.execute(
            f"SELECT count(*), sum({_OK_TIMES}), group_concat(start), group_concat(end) FROM {table}").fetchone()
        if count:
            _check_times(ex, table, ok, count)
            starts.append(_unpack(ex, s, count, table))
            ends.append(_unpack(ex, e, count, table))
    if not starts:
        return idle_summary(np.zeros(0, np.int64), np.zeros(0, np.int64))
    return idle_summary(np.concatenate(starts), np.concatenate(ends))
