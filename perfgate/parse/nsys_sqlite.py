"""Read an Nsight Systems SQLite export (`nsys export --type sqlite`) as a Timeline of records.

`read_nsys_sqlite` builds the gate's profiling captures (thousands of launches, each attributed to its NVTX
ranges by sort and sweep); analyze/nsys_summary.py aggregates in SQL for captures of millions of launches.
Both open the export through parse/nsys_export.py and check its rows with parse/nsys_checks.py.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from perfgate.errors import ReportFileError
from perfgate.parse.intervals import Span, enclosing
from perfgate.parse.invariants import IMPOSSIBLE_TRANSFER, DropCount, plausible_transfer
from perfgate.parse.nsys_checks import BAD_SIZE, BAD_SPAN, is_span, kernel_stream_notes
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
from perfgate.parse.records import ApiCall, KernelLaunch, MemoryOp, NvtxRange, Timeline

PID_MASK = 0xFFFFFFFFFF000000  # globalTid -> globalPid (correlation ids are per process)
MAX_TIMELINE_ROWS = 1_000_000  # per table: a record per row (~0.5 kB); analyze aggregates larger captures


def read_nsys_sqlite(path: Path) -> Timeline:
    """Every kernel, transfer, runtime call and NVTX range as records; kernels carry their NVTX stack.

    A row whose start/end are not integers or end before they start is dropped and counted in
    `Timeline.notes`, not refused: CUPTI can leave incomplete records at the end of a capture (buffers
    flushed at exit), and one such row should not hide every other kernel of a run; the note keeps it
    visible. Budget: at most MAX_TIMELINE_ROWS per table (one line otherwise)."""
    path = Path(path)
    with NsysExport(path) as ex:
        try:
            for table in (KERNEL_TABLE, RUNTIME_TABLE, MEMCPY_TABLE, MEMSET_TABLE, NVTX_TABLE):
                ex.within_budget(table, MAX_TIMELINE_ROWS)
            dropped = DropCount()
            overlaps = kernel_stream_notes(ex)
            kernels = tuple(_kernels(ex, dropped))
            memory_ops, api_calls, ranges = (
                tuple(_memory_ops(ex, dropped)),
                tuple(_api_calls(ex, dropped)),
                tuple(_nvtx(ex, dropped)),
            )
            return Timeline(
                source=path,
                kind="nsys",
                kernels=kernels,
                memory_ops=memory_ops,
                api_calls=api_calls,
                nvtx_ranges=ranges,
                gpu_name=ex.gpu_name,
                meta={"export_schema_version": ex.version},
                notes=dropped.notes() + overlaps + ex.string_notes(),
            )
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
            raise ReportFileError(path, f"SQLite error while reading the export ({err})") from err


def _count(value: Any) -> int | None:
    """A launch attribute (grid, block, registers, bytes): a non-negative integer, else absent."""
    return value if type(value) is int and value >= 0 else None


def _kernels(ex: NsysExport, dropped: DropCount) -> list[KernelLaunch]:
    cols = ex.columns(KERNEL_TABLE)
    opt = [
        c if c in cols else "NULL"
        for c in (
            "gridX",
            "gridY",
            "gridZ",
            "blockX",
            "blockY",
            "blockZ",
            "registersPerThread",
            "staticSharedMemory",
            "dynamicSharedMemory",
            "streamId",
            "deviceId",
        )
    ]
    rows = [
        r
        for r in ex.con.execute(
            f"SELECT demangledName, start, end, {', '.join(opt)}, correlationId, globalPid "
            f"FROM {KERNEL_TABLE} ORDER BY start"
        )
        if is_span(r[1], r[2])
    ]
    dropped.add(f"{KERNEL_TABLE} rows {BAD_SPAN}", ex.row_count(KERNEL_TABLE) - len(rows))
    names = ex.strings({r[0] for r in rows})
    stacks = _nvtx_stacks(ex, [(r[14], r[15]) for r in rows])
    out = []
    for r, stack in zip(rows, stacks):
        static, dynamic = _count(r[10]), _count(r[11])
        shared = None if static is None and dynamic is None else (static or 0) + (dynamic or 0)
        out.append(
            KernelLaunch(
                name=names.get(r[0], text(r[0])),
                start_ns=r[1],
                end_ns=r[2],
                grid=(_count(r[3]) or 0, _count(r[4]) or 0, _count(r[5]) or 0),
                block=(_count(r[6]) or 0, _count(r[7]) or 0, _count(r[8]) or 0),
                registers_per_thread=_count(r[9]),
                shared_mem_bytes=shared,
                stream=_count(r[12]),
                device=_count(r[13]),
                nvtx_range=stack[-1] if stack else "",
                nvtx_stack=stack,
            )
        )
    return out


def _nvtx_stacks(ex: NsysExport, launches: list[tuple[Any, Any]]) -> list[tuple[str, ...]]:
    """Per kernel (correlation id, process), the push/pop ranges on the launching thread that enclose its
    launch call, outermost first (parse/intervals.py)."""
    if not (ex.has(RUNTIME_TABLE) and ex.has(NVTX_TABLE) and ex.has("StringIds")):
        return [()] * len(launches)
    calls: dict[tuple[int, int], Span] = {}
    for corr, tid, start, end in ex.con.execute(f"SELECT correlationId, globalTid, start, end FROM {RUNTIME_TABLE}"):
        if type(corr) is int and type(tid) is int and is_span(start, end):
            calls[(corr, tid & PID_MASK)] = Span(tid, start, end)
    label, join = ex.nvtx_label()
    ranges = [
        (t, tid, start, end)
        for t, tid, start, end in ex.con.execute(
            f"SELECT {label}, n.globalTid, n.start, n.end FROM {NVTX_TABLE} n {join} WHERE n.eventType = {PUSH_POP}"
        )
        if type(tid) is int and is_span(start, end)
    ]
    spans = [Span(tid, start, end) for _, tid, start, end in ranges]
    texts = [text(t) for t, _, _, _ in ranges]
    wanted = [calls.get((corr, pid)) if type(corr) is int and type(pid) is int else None for corr, pid in launches]
    present = [s for s in wanted if s is not None]
    found = iter(enclosing(present, spans))
    return [tuple(texts[j] for j in next(found)) if s is not None else () for s in wanted]


def _memory_ops(ex: NsysExport, dropped: DropCount) -> Iterator[MemoryOp]:
    ops = []
    kinds = ex.copy_kinds()
    for table, kind_sql in ((MEMCPY_TABLE, "copyKind"), (MEMSET_TABLE, "NULL")):
        if not ex.has(table):
            continue
        bad = fast = 0
        for kind, nbytes, start, end in ex.con.execute(f"SELECT {kind_sql}, bytes, start, end FROM {table}"):
            size = 0 if nbytes is None else _count(nbytes)
            if not is_span(start, end) or size is None:
                bad += 1
                continue
            if not plausible_transfer(size, end - start):
                fast += 1
                continue
            label = "memset" if table == MEMSET_TABLE else kinds.get(kind, f"copy kind {text(kind)}")
            ops.append(MemoryOp(kind=label, bytes=size, start_ns=start, end_ns=end))
        dropped.add(f"{table} rows {BAD_SIZE}, or {BAD_SPAN.removeprefix('with ')}", bad)
        dropped.add(f"{table} rows {IMPOSSIBLE_TRANSFER}", fast)
    return iter(sorted(ops, key=lambda m: m.start_ns))


def _api_calls(ex: NsysExport, dropped: DropCount) -> list[ApiCall]:
    if not ex.has(RUNTIME_TABLE):
        return []
    rows = [
        r
        for r in ex.con.execute(f"SELECT nameId, start, end FROM {RUNTIME_TABLE} ORDER BY start")
        if is_span(r[1], r[2])
    ]
    dropped.add(f"{RUNTIME_TABLE} rows {BAD_SPAN}", ex.row_count(RUNTIME_TABLE) - len(rows))
    names = ex.strings({r[0] for r in rows})
    return [ApiCall(name=api_name(names.get(n, text(n))), start_ns=s, end_ns=e) for n, s, e in rows]


def _nvtx(ex: NsysExport, dropped: DropCount) -> list[NvtxRange]:
    """Push/pop and start/end ranges. A range without an end (still open when the capture stopped) is
    not a range, as for nsys stats; one with a non-integer time or ending before it starts is dropped."""
    if not ex.has(NVTX_TABLE):
        return []
    label, join = ex.nvtx_label()
    out, bad = [], 0
    for t, start, end, event_type in ex.con.execute(
        f"SELECT {label}, n.start, n.end, n.eventType FROM {NVTX_TABLE} n {join} "
        f"WHERE n.eventType IN ({PUSH_POP}, {START_END}) AND n.end IS NOT NULL ORDER BY n.start"
    ):
        if not is_span(start, end):
            bad += 1
            continue
        out.append(
            NvtxRange(
                text=text(t), start_ns=start, end_ns=end, style="PushPop" if event_type == PUSH_POP else "StartEnd"
            )
        )
    dropped.add(f"{NVTX_TABLE} ranges {BAD_SPAN}", bad)
    return out
