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
from urllib.parse import quote

from perfgate.errors import ReportFileError
from perfgate.inputs import check_regular_file
from perfgate.parse.intervals import Span, enclosing
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
COPY_KINDS = {0: "Unknown", 1: "Host-to-Device", 2: "Device-to-Host", 3: "Host-to-Array", 4: "Array-to-Host",
              5: "Array-to-Array", 6: "Array-to-Device", 7: "Device-to-Array", 8: "Device-to-Device",
              9: "Host-to-Host", 10: "Peer-to-Peer"}


def api_name(raw: str) -> str:
    """nsys stats' rule: a 6-character `_vNNNN` suffix is dropped (cudaLaunchKernel_v7000 ->
    cudaLaunchKernel); longer ones stay (cudaEventRecordWithFlags_v11010), as NVIDIA prints them."""
    return raw[:-6] if len(raw) > 6 and raw[-6:-4] == "_v" else raw


class NsysExport:
    """An opened and validated export (read-only); use as a context manager."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.con = _connect(self.path)
        try:
            self.tables = {r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            self.version = _schema_version(self.con, self.path, self.tables)
            if KERNEL_TABLE not in self.tables:
                raise ReportFileError(self.path, f"no {KERNEL_TABLE} table: the capture recorded no CUDA kernels "
                                                 "(was CUDA tracing on: nsys profile -t cuda,nvtx?)")
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

    def strings(self, ids: set[int]) -> dict[int, str]:
        """StringIds values for just these ids (a capture can hold millions of strings)."""
        if not ids or "StringIds" not in self.tables:
            return {}
        out: dict[int, str] = {}
        wanted = sorted(i for i in ids if isinstance(i, int))
        for k in range(0, len(wanted), 900):  # SQLite's bound-parameter limit
            chunk = wanted[k:k + 900]
            out.update((int(i), str(v)) for i, v in self.con.execute(
                f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(chunk))})", chunk))
        return out

    def copy_kinds(self) -> dict[int, str]:
        kinds = dict(COPY_KINDS)
        if "ENUM_CUDA_MEMCPY_OPER" in self.tables and "label" in self.columns("ENUM_CUDA_MEMCPY_OPER"):
            kinds.update({int(i): str(label) for i, label in self.con.execute(
                "SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER") if isinstance(i, int)})
        return kinds

    def _gpu_name(self) -> str:
        if "TARGET_INFO_GPU" not in self.tables or "name" not in self.columns("TARGET_INFO_GPU"):
            return ""
        row = self.con.execute("SELECT name FROM TARGET_INFO_GPU LIMIT 1").fetchone()
        return str(row[0]) if row and row[0] is not None else ""


def _connect(path: Path) -> sqlite3.Connection:
    st = check_regular_file(path, ReportFileError)
    if st.st_size == 0:
        raise ReportFileError(path, "the file is empty")
    with path.open("rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            raise ReportFileError(path, "not a SQLite file (export .nsys-rep with: nsys export --type sqlite)")
    try:
        con = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
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
        raise ReportFileError(path, f"export schema version {version} is not supported (perfgate reads "
                                    f"{SUPPORTED_MAJOR}.x); re-export with a matching nsys or upgrade perfgate")
    return version


def read_nsys_sqlite(path: Path) -> Timeline:
    """Every kernel, transfer, runtime call and NVTX range as records; kernels carry their NVTX stack."""
    path = Path(path)
    with NsysExport(path) as ex:
        try:
            return Timeline(source=path, kind="nsys", kernels=tuple(_kernels(ex)), memory_ops=tuple(_memory_ops(ex)),
                            api_calls=tuple(_api_calls(ex)), nvtx_ranges=tuple(_nvtx(ex)), gpu_name=ex.gpu_name,
                            meta={"export_schema_version": ex.version})
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
            raise ReportFileError(path, f"SQLite error while reading the export ({err})") from err


def _int(column: str, alias: str = "") -> str:
    return f"CAST({alias}{column} AS INTEGER)"


def _kernels(ex: NsysExport) -> list[KernelLaunch]:
    cols = ex.columns(KERNEL_TABLE)
    opt = {c: (_int(c) if c in cols else "NULL") for c in (
        "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
        "dynamicSharedMemory", "streamId", "deviceId")}
    rows = ex.con.execute(
        f"SELECT demangledName, {_int('start')}, {_int('end')}, {opt['gridX']}, {opt['gridY']}, {opt['gridZ']}, "
        f"{opt['blockX']}, {opt['blockY']}, {opt['blockZ']}, {opt['registersPerThread']}, "
        f"{opt['staticSharedMemory']}, {opt['dynamicSharedMemory']}, {opt['streamId']}, {opt['deviceId']}, "
        f"{_int('correlationId')}, {_int('globalPid')} FROM {KERNEL_TABLE} "
        f"WHERE start IS NOT NULL AND end IS NOT NULL ORDER BY start").fetchall()
    names = ex.strings({r[0] for r in rows})
    stacks = _nvtx_stacks(ex, [(r[14], r[15]) for r in rows])
    out = []
    for r, stack in zip(rows, stacks):
        shared = None if r[10] is None and r[11] is None else (r[10] or 0) + (r[11] or 0)
        out.append(KernelLaunch(name=names.get(r[0], str(r[0])), start_ns=r[1], end_ns=r[2],
                                grid=(r[3] or 0, r[4] or 0, r[5] or 0), block=(r[6] or 0, r[7] or 0, r[8] or 0),
                                registers_per_thread=r[9], shared_mem_bytes=shared, stream=r[12], device=r[13],
                                nvtx_range=stack[-1] if stack else "", nvtx_stack=stack))
    return out


def _nvtx_stacks(ex: NsysExport, launches: list[tuple[int | None, int | None]]) -> list[tuple[str, ...]]:
    """Per kernel (correlation id, process), the push/pop ranges on the launching thread that enclose its
    launch call, outermost first (parse/intervals.py)."""
    if not (ex.has(RUNTIME_TABLE) and ex.has(NVTX_TABLE)):
        return [()] * len(launches)
    calls: dict[tuple[int, int], Span] = {}
    for corr, tid, start, end in ex.con.execute(
            f"SELECT {_int('correlationId')}, {_int('globalTid')}, {_int('start')}, {_int('end')} FROM {RUNTIME_TABLE} "
            "WHERE start IS NOT NULL AND end IS NOT NULL AND globalTid IS NOT NULL"):
        calls[(corr, tid & PID_MASK)] = Span(tid, start, end)
    ranges = ex.con.execute(
        f"SELECT coalesce(n.text, s.value), {_int('globalTid', 'n.')}, {_int('start', 'n.')}, {_int('end', 'n.')} "
        f"FROM {NVTX_TABLE} n LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType = {PUSH_POP} "
        "AND n.start IS NOT NULL AND n.end IS NOT NULL").fetchall() if ex.has("StringIds") else []
    spans = [Span(tid, start, end) for _, tid, start, end in ranges]
    texts = [str(t) if t is not None else "" for t, _, _, _ in ranges]
    wanted = [calls.get((corr, pid)) if corr is not None and pid is not None else None for corr, pid in launches]
    present = [s for s in wanted if s is not None]
    found = iter(enclosing(present, spans))
    return [tuple(texts[j] for j in next(found)) if s is not None else () for s in wanted]


def _memory_ops(ex: NsysExport) -> Iterator[MemoryOp]:
    ops = []
    if ex.has(MEMCPY_TABLE):
        kinds = ex.copy_kinds()
        for kind, nbytes, start, end in ex.con.execute(
                f"SELECT {_int('copyKind')}, {_int('bytes')}, {_int('start')}, {_int('end')} FROM {MEMCPY_TABLE} "
                "WHERE start IS NOT NULL AND end IS NOT NULL"):
            ops.append(MemoryOp(kind=kinds.get(kind, f"copy kind {kind}"), bytes=nbytes or 0, start_ns=start,
                                end_ns=end))
    if ex.has(MEMSET_TABLE):
        for nbytes, start, end in ex.con.execute(
                f"SELECT {_int('bytes')}, {_int('start')}, {_int('end')} FROM {MEMSET_TABLE} "
                "WHERE start IS NOT NULL AND end IS NOT NULL"):
            ops.append(MemoryOp(kind="memset", bytes=nbytes or 0, start_ns=start, end_ns=end))
    return iter(sorted(ops, key=lambda m: m.start_ns))


def _api_calls(ex: NsysExport) -> list[ApiCall]:
    if not ex.has(RUNTIME_TABLE):
        return []
    rows = ex.con.execute(f"SELECT {_int('nameId')}, {_int('start')}, {_int('end')} FROM {RUNTIME_TABLE} "
                          "WHERE start IS NOT NULL AND end IS NOT NULL ORDER BY start").fetchall()
    names = ex.strings({r[0] for r in rows})
    return [ApiCall(name=api_name(names.get(n, str(n))), start_ns=s, end_ns=e) for n, s, e in rows]


def _nvtx(ex: NsysExport) -> list[NvtxRange]:
    if not ex.has(NVTX_TABLE):
        return []
    join = "LEFT JOIN StringIds s ON s.id = n.textId" if ex.has("StringIds") else ""
    text = "coalesce(n.text, s.value)" if join else "n.text"
    sql = (f"SELECT {text}, {_int('start', 'n.')}, {_int('end', 'n.')}, {_int('eventType', 'n.')} FROM {NVTX_TABLE} n "
           f"{join} WHERE n.eventType IN ({PUSH_POP}, {START_END}) AND n.start IS NOT NULL AND n.end IS NOT NULL "
           "ORDER BY n.start")
    return [NvtxRange(text=str(t) if t is not None else "", start_ns=s, end_ns=e,
                      style="PushPop" if et == PUSH_POP else "StartEnd") for t, s, e, et in ex.con.execute(sql)]
