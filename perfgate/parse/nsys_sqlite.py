"""Read an Nsight Systems SQLite export (`nsys export --type sqlite`).

The export schema is versioned (META_DATA_EXPORT / EXPORT_SCHEMA_VERSION, e.g. 3.20.3): micro bumps only
add, so we accept major 3 and probe the columns we need. A table exists only when it has rows (no memsets
-> no CUPTI_ACTIVITY_KIND_MEMSET), so absent tables mean "none", not an error.

Two readers share the opening and validation: `read_nsys_sqlite` builds a Timeline of records (the gate's
profiling captures: thousands of launches, each attributed to its NVTX ranges by sort and sweep), and
analyze/nsys_summary.py aggregates in SQL for captures of millions of launches.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from perfgate.errors import ReportFileError
from perfgate.inputs import check_regular_file, readonly_sqlite_uri
from perfgate.parse.intervals import Span, enclosing
from perfgate.parse.invariants import IMPOSSIBLE_TRANSFER, DropCount, plausible_transfer, printable
from perfgate.parse.records import ApiCall, KernelLaunch, MemoryOp, NvtxRange, Timeline

SUPPORTED_MAJOR = 3
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
NVTX_TABLE = "NVTX_EVENTS"
KERNEL_COLUMNS = ("start", "end", "correlationId", "globalPid", "demangledName")
PUSH_POP, START_END = 59, 60
PID_MASK = 0xFFFFFFFFFF000000  # globalTid -> globalPid (correlation ids are per process)
# ENUM_CUDA_MEMCPY_OPER ids, used when the export lacks the enum table
COPY_KINDS = {
    0: "Unknown",
    1: "Host-to-Device",
    2: "Device-to-Host",
    3: "Host-to-Array",
    4: "Array-to-Host",
    5: "Array-to-Array",
    6: "Array-to-Device",
    7: "Device-to-Array",
    8: "Device-to-Device",
    9: "Host-to-Host",
    10: "Peer-to-Peer",
}


def api_name(raw: str) -> str:
    """nsys stats' rule: a 6-character `_vNNNN` suffix is dropped (cudaLaunchKernel_v7000 ->
    cudaLaunchKernel); longer ones stay (cudaEventRecordWithFlags_v11010), as NVIDIA prints them."""
    return raw[:-6] if len(raw) > 6 and raw[-6:-4] == "_v" else raw


class NsysExport:
    """An opened and validated export (read-only); use as a context manager."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.con = _connect(self.path)
        self._strings: dict[Any, str] = {}
        self.missing_ids: set[int] = set()  # string ids named by a row but absent from StringIds
        try:
            self.tables = {r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            self.version = _schema_version(self.con, self.path, self.tables)
            if KERNEL_TABLE not in self.tables:
                raise ReportFileError(
                    self.path,
                    f"no {KERNEL_TABLE} table: the capture recorded no CUDA kernels "
                    "(was CUDA tracing on: nsys profile -t cuda,nvtx?)",
                )
            self.require(KERNEL_TABLE, KERNEL_COLUMNS)
            self.gpu_name = self._gpu_name()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
            self.con.close()
            raise ReportFileError(self.path, f"SQLite error while reading the export ({err})") from err
        except BaseException:
            self.con.close()
            raise

    def __enter__(self) -> NsysExport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.con.close()

    def has(self, table: str) -> bool:
        return table in self.tables

    def columns(self, table: str) -> set[str]:
        return {r[1] for r in self.con.execute(f"PRAGMA table_info({table})")}

    def require(self, table: str, needed: tuple[str, ...]) -> None:
        missing = [c for c in needed if c not in self.columns(table)]
        if missing:
            raise ReportFileError(self.path, f"{table} lacks column(s) {missing}; unsupported nsys export")

    def strings(self, ids: set[Any]) -> dict[int, str]:
        """StringIds values for just these ids (a capture can hold millions of strings), as text; an id
        missing from StringIds (a damaged export) is named `<unknown name id N>` and remembered."""
        out: dict[int, str] = {}
        wanted = sorted(i for i in ids if type(i) is int)
        if "StringIds" in self.tables:
            for k in range(0, len(wanted), 900):  # SQLite's bound-parameter limit
                chunk = wanted[k : k + 900]
                out.update(
                    (i, text(v))
                    for i, v in self.con.execute(
                        f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(chunk))})", chunk
                    )
                    if type(i) is int
                )
        for i in wanted:
            if i not in out:
                out[i] = self._unknown(i)
        return out

    def string(self, key: Any) -> str:
        """One StringIds value as text; an id with no string is named `<unknown name id N>` and remembered."""
        if key not in self._strings:
            if type(key) is int:
                self._strings[key] = self.strings({key})[key]
            else:
                self._strings[key] = text(key)  # not an id at all (NULL, text, a blob in a damaged export)
        return self._strings[key]

    def _unknown(self, key: int) -> str:
        self.missing_ids.add(key)
        return unknown_name(key)

    def nvtx_label(self) -> tuple[str, str]:
        """(SQL label, join) for NVTX_EVENTS rows `n`: the inline text, else the string of textId, else
        `<unknown name id N>` for a textId missing from StringIds."""
        if "textId" not in self.columns(NVTX_TABLE):
            return "n.text", ""
        if not self.has("StringIds"):
            return f"coalesce(n.text, {_UNKNOWN_SQL})", ""
        return f"coalesce(n.text, s.value, {_UNKNOWN_SQL})", "LEFT JOIN StringIds s ON s.id = n.textId"

    def string_notes(self) -> tuple[str, ...]:
        """A note counting the string ids rows named that StringIds lacks (kernels, calls, NVTX ranges)."""
        missing = set(self.missing_ids)
        if self.has(NVTX_TABLE) and "textId" in self.columns(NVTX_TABLE):
            where = "n.text IS NULL AND typeof(n.textId) = 'integer'"
            sql = (
                f"SELECT DISTINCT n.textId FROM {NVTX_TABLE} n LEFT JOIN StringIds s ON s.id = n.textId "
                f"WHERE {where} AND s.id IS NULL"
                if self.has("StringIds")
                else f"SELECT DISTINCT n.textId FROM {NVTX_TABLE} n WHERE {where}"
            )
            missing.update(i for (i,) in self.con.execute(sql))
        if not missing:
            return ()
        return (
            f"{len(missing):,} string id(s) missing from StringIds (a damaged export), first "
            f"{min(missing)}: their rows are named {unknown_name(min(missing))}",
        )

    def copy_kinds(self) -> dict[int, str]:
        kinds = dict(COPY_KINDS)
        if "ENUM_CUDA_MEMCPY_OPER" in self.tables and "label" in self.columns("ENUM_CUDA_MEMCPY_OPER"):
            kinds.update(
                {
                    i: text(label)
                    for i, label in self.con.execute("SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER")
                    if type(i) is int
                }
            )
        return kinds

    def row_count(self, table: str) -> int:
        return int(self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]) if self.has(table) else 0

    def within_budget(self, table: str, max_rows: int) -> None:
        rows = self.row_count(table)
        if rows > max_rows:
            raise ReportFileError(
                self.path,
                f"{table} has {rows:,} rows, more than the {max_rows:,} a timeline "
                "reads; summarise the capture with perfgate analyze instead",
            )

    def _gpu_name(self) -> str:
        if "TARGET_INFO_GPU" not in self.tables or "name" not in self.columns("TARGET_INFO_GPU"):
            return ""
        row = self.con.execute("SELECT name FROM TARGET_INFO_GPU LIMIT 1").fetchone()
        return text(row[0]) if row else ""


def unknown_name(key: int) -> str:
    return f"<unknown name id {key}>"


_UNKNOWN_SQL = "CASE WHEN typeof(n.textId) = 'integer' THEN '<unknown name id ' || n.textId || '>' END"


def text(value: Any) -> str:
    """A name from the export as text: nsys writes TEXT, a damaged file can hold numbers, blobs or NULL
    (a blob is decoded, not printed as b'...'; NULL is the empty name); control characters replaced."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, bytes):
        return printable(value.decode("utf-8", errors="replace"))
    return "" if value is None else str(value)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _connect(path: Path) -> sqlite3.Connection:
    st = check_regular_file(path, ReportFileError)
    if st.st_size == 0:
        raise ReportFileError(path, "the file is empty")
    with path.open("rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            raise ReportFileError(path, "not a SQLite file (export .nsys-rep with: nsys export --type sqlite)")
    try:
        # a WAL-mode export opened `mode=ro` alone gets a -wal and -shm beside it: read it as the history is read
        con = sqlite3.connect(readonly_sqlite_uri(path), uri=True)
        con.text_factory = _decode  # TEXT that is not UTF-8 (a damaged string table) reads with U+FFFD
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
        raise ReportFileError(path, f"corrupt or truncated SQLite file ({err})") from err
    return con


def _schema_version(con: sqlite3.Connection, path: Path, tables: set[str]) -> str:
    if "META_DATA_EXPORT" not in tables:
        raise ReportFileError(path, "not an Nsight Systems export (no META_DATA_EXPORT table)")
    version = ""
    for row in con.execute("SELECT * FROM META_DATA_EXPORT"):
        if "EXPORT_SCHEMA_VERSION" in row:
            at = row.index("EXPORT_SCHEMA_VERSION") + 1
            version = str(row[at]) if at < len(row) else ""
    if not version:
        raise ReportFileError(path, "Nsight Systems export without EXPORT_SCHEMA_VERSION")
    if version.split(".")[0] != str(SUPPORTED_MAJOR):
        raise ReportFileError(
            path,
            f"export schema version {version} is not supported (perfgate reads "
            f"{SUPPORTED_MAJOR}.x); re-export with a matching nsys or upgrade perfgate",
        )
    return version


# No timestamp or duration of a capture reaches 1e18 ns (31 years; the torch reader's bound, 1e15 us): a
# row past it is damaged, and summing such rows would report a GPU busy for centuries.
MAX_NS = 10**18
BAD_SPAN = "with a missing, negative or non-integer start or end, ending before they start, or past 1e18 ns (31 years)"
BAD_SIZE = "with a negative or non-integer size"
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


_SPAN_SQL = f"typeof(start) = 'integer' AND typeof(end) = 'integer' AND start >= 0 AND end >= start AND end < {MAX_NS}"


def kernel_stream_notes(ex: NsysExport) -> tuple[str, ...]:
    """Check the kernels of each (device, stream) against each other, in one sorted pass in SQLite.

    Rows that repeat another row exactly (start, end, device, stream, correlation id and process) are a
    copied table, not a capture: CUPTI writes one record per launch, and folding copies in would double
    every count and total, so the file is refused. Kernels of one stream that overlap in time are
    possible (parallel branches of a CUDA graph, programmatic dependent launch) but make the stream's
    kernel time exceed the time it was busy: a note says so instead of passing the sum silently."""
    cols = ex.columns(KERNEL_TABLE)
    dev, stream = (c if c in cols else "NULL" for c in ("deviceId", "streamId"))
    cursor = ex.con.execute(
        f"SELECT {dev}, {stream}, start, end, correlationId, globalPid FROM {KERNEL_TABLE} "
        f"WHERE {_SPAN_SQL} ORDER BY 1, 2, 3, 4, 5, 6"
    )
    sweep = _StreamSweep()
    while rows := cursor.fetchmany(65_536):
        sweep.add(rows)
    if sweep.duplicates:
        (d, st), first = sweep.first_duplicate
        raise ReportFileError(
            ex.path,
            f"{KERNEL_TABLE} holds {sweep.duplicates:,} row(s) repeating another row "
            f"exactly (start, end, device, stream, correlation id; the first at start "
            f"{first} ns on device {text(d)} stream {text(st)}): a copied table, not a "
            "capture",
        )
    return tuple(
        f"kernels on device {text(d)} stream {text(st)} overlap in time: their durations sum to "
        f"{summed:,} ns, more than the {busy:,} ns the stream was busy (CUDA graph branches or "
        "programmatic dependent launch; per-kernel totals count the overlap)"
        for (d, st), (summed, busy) in sweep.streams.items()
        if summed > busy
    )


class _StreamSweep:
    """Kernel rows sorted by (device, stream, start, end, correlation id, process): per stream, the sum of
    durations and the busy time (the union of the spans), exactly, in Python ints; and rows equal to the
    one before (sorting puts exact copies side by side)."""

    def __init__(self) -> None:
        self.streams: dict[tuple[Any, Any], tuple[int, int]] = {}
        self.duplicates = 0
        self.first_duplicate: tuple[tuple[Any, Any], int] = ((None, None), 0)
        self._prev: tuple[Any, ...] = ()
        self._key: tuple[Any, Any] | None = None
        self._summed = self._busy = self._reach = 0

    def add(self, rows: list[tuple[Any, ...]]) -> None:
        key, summed, busy, reach, prev = self._key, self._summed, self._busy, self._reach, self._prev
        for row in rows:
            d, st, start, end = row[0], row[1], row[2], row[3]
            if key is None or key[0] != d or key[1] != st:
                if key is not None:
                    self.streams[key] = (summed, busy)
                key, summed, busy, reach = (d, st), 0, 0, start
            elif row == prev:
                if not self.duplicates:
                    self.first_duplicate = (key, start)
                self.duplicates += 1
            summed += end - start
            if end > reach:
                busy += end - max(start, reach)
                reach = end
            prev = row
        if key is not None:
            self.streams[key] = (summed, busy)
        self._key, self._summed, self._busy, self._reach, self._prev = key, summed, busy, reach, prev


def is_span(start: Any, end: Any) -> bool:
    """SQLite hands back int, float, str, bytes or None: a span is two integers with 0 <= start <= end <
    MAX_NS (nsys timestamps count from 0; then every difference of two timestamps fits int64)."""
    return type(start) is int and type(end) is int and 0 <= start <= end < MAX_NS


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
