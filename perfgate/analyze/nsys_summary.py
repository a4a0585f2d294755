"""`perfgate analyze` on an nsys export: the four `nsys stats` summaries and GPU idle time, aggregated where
it is cheapest. SQLite groups the rows and hands each group's durations over as one packed string; numpy
turns that into an array and computes the statistics. Groups are reduced as they are read (the cursor
is iterated, never fetched whole), so memory follows the largest group, not the capture: a 5M-kernel
export with 30M runtime calls stays in a few hundred MB.

Rows that cannot be true (start/end not integers, end before start, a negative size) are dropped and
counted in the summary's notes, not refused: CUPTI can leave incomplete records at the end of a capture,
one of them should not hide a million good rows, and the note keeps them visible. Sums that leave int64
refuse the file (no real capture runs for 292 years). See parse/invariants.py.
"""

from __future__ import annotations

import sqlite3
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from perfgate.analyze.summary import (
    ApiRow,
    DurationStats,
    IdleSummary,
    IdleSweep,
    IntArray,
    KernelRow,
    MemoryRow,
    NvtxRow,
    TimelineSummary,
    duration_stats,
)
from perfgate.errors import ReportFileError
from perfgate.parse.invariants import (
    IMPOSSIBLE_TRANSFER,
    MAX_BYTES_PER_NS,
    DropCount,
    OutOfRange,
    exact_total,
)
from perfgate.parse.nsys_checks import BAD_SIZE, BAD_SPAN, MAX_NS, kernel_stream_notes
from perfgate.parse.nsys_export import (
    KERNEL_TABLE,
    MEMCPY_TABLE,
    MEMSET_TABLE,
    NVTX_TABLE,
    PUSH_POP,
    RUNTIME_TABLE,
    START_END,
    NsysExport,
    api_name,
    text,
)

SPAN_CHART_TOP = 12
SPANS_PER_KERNEL = 20_000  # a chart cannot show more bars than this per row anyway
# a row is a span when both times are integers with 0 <= start <= end < MAX_NS (31 years): then every
# difference of two timestamps (durations, gaps, the capture's span) fits int64 (timestamps count from 0)
OK = f"typeof(start) = 'integer' AND typeof(end) = 'integer' AND start >= 0 AND end >= start AND end < {MAX_NS}"
_SIZE_OK = "(bytes IS NULL OR (typeof(bytes) = 'integer' AND bytes >= 0))"
# invariants.plausible_transfer in SQL (the span and size are checked first: end - start cannot overflow)
_FAST_ENOUGH = f"(bytes IS NULL OR bytes <= {MAX_BYTES_PER_NS} * max(end - start, 1))"


def summarize_nsys(path: Path, type_label: str, with_spans: bool = False) -> TimelineSummary:
    with NsysExport(path) as ex:
        try:
            dropped = DropCount()
            overlaps = kernel_stream_notes(ex)
            kernels, spans = _kernels(ex, dropped, with_spans)
            memory, api, nvtx = _memory(ex, dropped), _api(ex, dropped), _nvtx(ex, dropped)
            return TimelineSummary(
                source=str(path),
                type=type_label,
                kind="nsys",
                gpu=ex.gpu_name,
                meta={"export_schema_version": ex.version},
                kernels=kernels,
                memory=memory,
                api=api,
                nvtx=nvtx,
                gpu_idle=_idle(ex),
                spans=spans,
                notes=dropped.notes() + overlaps + ex.string_notes(),
            )
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
            raise ReportFileError(path, f"SQLite error while reading the export ({err})") from err
        except OutOfRange as err:
            raise ReportFileError(path, str(err)) from err


def _unpack(ex: NsysExport, packed: Any, expected: int, what: str) -> IntArray:
    """The comma-joined integers SQLite made of one group; every row must have come through."""
    if expected == 0:
        return np.zeros(0, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy only warns when it stops early on a non-number
        try:
            values: IntArray = np.fromstring(str(packed), dtype=np.int64, sep=",")
        except (ValueError, DeprecationWarning) as err:
            raise ReportFileError(ex.path, f"{what}: non-integer values") from err
    if values.size != expected:
        raise ReportFileError(ex.path, f"{what}: non-integer values")
    return values


@dataclass
class _Groups:
    """Per name, the statistics of its rows, each group reduced as soon as SQLite hands it over. A group
    with dropped rows, or two groups that turn out to share a name (two string ids with one text,
    cudaFoo_v3020 and cudaFoo), is deferred: `finish` reads the usable rows of the deferred groups in one
    more grouped pass and reduces each name over all of its groups, exactly."""

    stats: dict[str, DurationStats]
    keys: dict[str, list[Any]]
    deferred: set[str]
    what: str

    @classmethod
    def empty(cls, what: str) -> _Groups:
        return cls({}, defaultdict(list), set(), what)

    def add(self, name: str, key: Any, values: IntArray | None) -> None:
        self.keys[name].append(key)
        if values is None or name in self.stats or name in self.deferred:
            self.stats.pop(name, None)
            self.deferred.add(name)
        else:
            self.stats[name] = duration_stats(values, self.what)

    def finish(self, fetch: Callable[[list[Any]], Iterator[tuple[Any, IntArray]]]) -> dict[str, DurationStats]:
        name_of = {key: name for name in self.deferred for key in self.keys[name]}
        parts: dict[str, list[IntArray]] = defaultdict(list)
        for key, values in fetch(list(name_of)):
            parts[name_of[key]].append(values)
        for name, arrays in parts.items():
            self.stats[name] = duration_stats(np.concatenate(arrays), self.what)
        return self.stats


def _grouped(
    ex: NsysExport, table: str, key: str, what: str, dropped: DropCount, *extra: str
) -> Iterator[tuple[Any, ...]]:
    """(key, *extra aggregates, durations) per group, streamed. Rows that are not spans are counted as
    dropped; their group's durations are None (read again, without them, by `_usable`). Filtering in
    the grouped pass itself would cost every clean capture a CASE per row (a fifth of the time)."""
    aggs = "".join(f", {e}" for e in extra)
    for row in ex.con.execute(
        f"SELECT {key}, count(*), sum({OK}){aggs}, group_concat(end - start) FROM {table} GROUP BY {key}"
    ):
        count, ok = row[1], row[2] or 0
        dropped.add(f"{what} rows {BAD_SPAN}", count - ok)
        yield (row[0], *row[3:-1], _unpack(ex, row[-1], count, what) if ok == count else None)


def _usable(ex: NsysExport, table: str, key: str, what: str) -> Callable[[list[Any]], Iterator[tuple[Any, IntArray]]]:
    """The durations of the rows that are spans, for these group keys, one group at a time."""

    def fetch(keys: list[Any]) -> Iterator[tuple[Any, IntArray]]:
        for k in range(0, len(keys), 900):  # SQLite's bound-parameter limit
            chunk = keys[k : k + 900]
            where = " OR ".join(f"{key} IS ?" for _ in chunk)  # IS, not IN: a NULL key is a group too
            for group, count, packed in ex.con.execute(
                f"SELECT {key}, count(*), group_concat(end - start) FROM {table} WHERE {OK} AND ({where}) "
                f"GROUP BY {key}",
                chunk,
            ):
                yield group, _unpack(ex, packed, count, what)

    return fetch


def _kernels(
    ex: NsysExport, dropped: DropCount, with_spans: bool
) -> tuple[tuple[KernelRow, ...], dict[str, tuple[IntArray, IntArray]]]:
    regs = (
        "max(CASE WHEN typeof(registersPerThread) = 'integer' AND registersPerThread >= 0 THEN registersPerThread END)"
        if "registersPerThread" in ex.columns(KERNEL_TABLE)
        else "NULL"
    )
    groups = _Groups.empty("kernel durations")
    registers: dict[str, int | None] = {}
    for name_id, reg, values in _grouped(ex, KERNEL_TABLE, "demangledName", KERNEL_TABLE, dropped, regs):
        name = ex.string(name_id)
        groups.add(name, name_id, values)
        registers[name] = max((r for r in (registers.get(name), reg) if type(r) is int), default=None)
    stats = groups.finish(_usable(ex, KERNEL_TABLE, "demangledName", KERNEL_TABLE))
    total = exact_total(np.array([s.total_ns for s in stats.values()], dtype=np.int64), "kernel durations")
    out = tuple(
        sorted(
            (KernelRow(n, s, 100.0 * s.total_ns / total if total else 0.0, registers[n]) for n, s in stats.items()),
            key=lambda k: (-k.stats.total_ns, k.name),
        )
    )
    spans = {k.name: _spans(ex, groups.keys[k.name], k.stats.count) for k in out[:SPAN_CHART_TOP]} if with_spans else {}
    return out, spans


def _spans(ex: NsysExport, keys: list[Any], count: int) -> tuple[IntArray, IntArray]:
    """Every step-th launch of these name ids in time order (a chart shows at most SPANS_PER_KERNEL)."""
    step = max(1, count // SPANS_PER_KERNEL)
    keys = keys[:900]  # SQLite's bound-parameter limit; only a damaged export has more ids for one name
    where = " OR ".join("demangledName IS ?" for _ in keys)
    rows = ex.con.execute(
        f"SELECT start, end FROM (SELECT start, end, row_number() OVER (ORDER BY start) - 1 AS i FROM {KERNEL_TABLE} "
        f"WHERE {OK} AND ({where})) WHERE i % {step} = 0 ORDER BY start",
        keys,
    ).fetchall()
    arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0].copy(), arr[:, 1].copy()


def _memory(ex: NsysExport, dropped: DropCount) -> tuple[MemoryRow, ...]:
    """Transfers by kind. Transfer tables are small next to kernels and API calls: each kind's usable
    rows are filtered in SQL and their arrays kept until every table is read (kinds can meet across
    tables), which keeps this exact without a second pass."""
    durations: dict[str, list[IntArray]] = defaultdict(list)
    sizes: dict[str, list[IntArray]] = defaultdict(list)
    kinds = ex.copy_kinds()
    readable = f"{OK} AND {_SIZE_OK}"
    usable = f"{readable} AND {_FAST_ENOUGH}"
    for table, key in ((MEMCPY_TABLE, "copyKind"), (MEMSET_TABLE, "NULL")):
        if not ex.has(table):
            continue
        bad, fast = ex.con.execute(
            f"SELECT coalesce(sum(NOT ({readable})), 0), coalesce(sum(({readable}) AND NOT {_FAST_ENOUGH}), 0) "
            f"FROM {table}"
        ).fetchone()
        dropped.add(f"{table} rows {BAD_SIZE}, or {BAD_SPAN.removeprefix('with ')}", bad)
        dropped.add(f"{table} rows {IMPOSSIBLE_TRANSFER}", fast)
        for kind, count, packed, packed_bytes in ex.con.execute(
            f"SELECT {key}, count(*), group_concat(end - start), group_concat(coalesce(bytes, 0)) FROM {table} "
            f"WHERE {usable} GROUP BY {key}"
        ):
            label = "memset" if table == MEMSET_TABLE else kinds.get(kind, f"copy kind {text(kind)}")
            durations[label].append(_unpack(ex, packed, count, table))
            sizes[label].append(_unpack(ex, packed_bytes, count, table))
    rows = (
        MemoryRow(
            kind,
            duration_stats(np.concatenate(parts), "transfer durations"),
            exact_total(np.concatenate(sizes[kind]), "transfer sizes"),
        )
        for kind, parts in durations.items()
    )
    return tuple(sorted(rows, key=lambda m: (-m.stats.total_ns, m.kind)))


def _api(ex: NsysExport, dropped: DropCount) -> tuple[ApiRow, ...]:
    if not ex.has(RUNTIME_TABLE):
        return ()
    groups = _Groups.empty("runtime call durations")
    for name_id, values in _grouped(ex, RUNTIME_TABLE, "nameId", RUNTIME_TABLE, dropped):
        groups.add(api_name(ex.string(name_id)), name_id, values)
    stats = groups.finish(_usable(ex, RUNTIME_TABLE, "nameId", RUNTIME_TABLE))
    return tuple(sorted((ApiRow(n, s) for n, s in stats.items()), key=lambda a: (-a.stats.total_ns, a.name)))


def _nvtx(ex: NsysExport, dropped: DropCount) -> tuple[NvtxRow, ...]:
    """Push/pop and start/end ranges by text and style. A range without an end (still open when the
    capture stopped) is not a range, as for nsys stats; one with a bad time is dropped and counted."""
    if not ex.has(NVTX_TABLE):
        return ()
    label, join = ex.nvtx_label()
    out = []
    for event_type, style in ((PUSH_POP, "PushPop"), (START_END, "StartEnd")):
        source = (
            f"(SELECT {label} AS label, n.start AS start, n.end AS end FROM {NVTX_TABLE} n {join} "
            f"WHERE n.eventType = {event_type} AND n.end IS NOT NULL)"
        )
        what = f"{NVTX_TABLE} {style}"
        groups = _Groups.empty("NVTX range durations")
        for key, values in _grouped(ex, source, "label", what, dropped):
            groups.add(text(key), key, values)
        stats = groups.finish(_usable(ex, source, "label", what))
        out += [NvtxRow(name, style, s) for name, s in stats.items()]
    return tuple(sorted(out, key=lambda r: (-r.stats.total_ns, r.range)))


def _idle(ex: NsysExport) -> IdleSummary:
    """GPU busy time over kernels and transfers: SQLite sorts the usable rows by start (its sorter spills
    to disk) and they are swept in chunks, so memory does not grow with the capture."""
    parts = []
    for table in (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE):
        if ex.has(table):
            sized = "" if table == KERNEL_TABLE else f" AND {_SIZE_OK}"  # as the memory summary counts them
            parts.append(f"SELECT start, end FROM {table} WHERE {OK}{sized}")
    sweep = IdleSweep()
    if parts:
        cursor = ex.con.execute(" UNION ALL ".join(parts) + " ORDER BY start")
        while rows := cursor.fetchmany(65_536):
            chunk = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=2 * len(rows)).reshape(-1, 2)
            sweep.add(chunk[:, 0], chunk[:, 1])
    return sweep.summary()
