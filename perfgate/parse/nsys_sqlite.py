"""Read an Nsight Systems SQLite export (`nsys export --type sqlite`) into a Timeline.

The export schema is versioned (META_DATA_EXPORT / EXPORT_SCHEMA_VERSION, e.g. 3.20.3): micro bumps
only add, so we accept major 3 and probe the columns we need. A table exists only when it has rows
(no memsets -> no CUPTI_ACTIVITY_KIND_MEMSET), so absent tables mean "none", not an error.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from perfgate.errors import ReportFileError
from perfgate.parse.records import ApiCall, KernelLaunch, MemoryOp, NvtxRange, Timeline

SUPPORTED_MAJOR = 3
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
KERNEL_COLUMNS = ("start", "end", "correlationId", "globalPid", "demangledName")
PUSH_POP, START_END = 59, 60


def api_name(raw: str) -> str:
    """nsys stats' rule: a 6-character `_vNNNN` suffix is dropped (cudaLaunchKernel_v7000 ->
    cudaLaunchKernel); longer ones stay (cudaEventRecordWithFlags_v11010), as NVIDIA prints them."""
    return raw[:-6] if len(raw) > 6 and raw[-6:-4] == "_v" else raw
# ENUM_CUDA_MEMCPY_OPER ids, used when the export lacks the enum table
_COPY_KINDS = {0: "Unknown", 1: "Host-to-Device", 2: "Device-to-Host", 3: "Host-to-Array", 4: "Array-to-Host",
               5: "Array-to-Array", 6: "Array-to-Device", 7: "Device-to-Array", 8: "Device-to-Device",
               9: "Host-to-Host", 10: "Peer-to-Peer"}


def read_nsys_sqlite(path: Path) -> Timeline:
    path = Path(path)
    con = _connect(path)
    try:
        tables = {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
        version = _schema_version(con, path, tables)
        if KERNEL_TABLE not in tables:
            raise ReportFileError(path, f"no {KERNEL_TABLE} table: the capture recorded no CUDA kernels "
                                        "(was CUDA tracing on: nsys profile -t cuda,nvtx?)")
        _require_columns(con, path, KERNEL_TABLE, KERNEL_COLUMNS)
        return Timeline(source=path, kind="nsys", kernels=tuple(_kernels(con, tables)),
                        memory_ops=tuple(_memory_ops(con, tables)), api_calls=tuple(_api_calls(con, tables)),
                        nvtx_ranges=tuple(_nvtx(con, tables)), gpu_name=_gpu_name(con, tables),
                        meta={"export_schema_version": version})
    except sqlite3.DatabaseError as err:
        raise ReportFileError(path, f"SQLite error while reading the export ({err})") from err
    finally:
        con.close()


def _connect(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise ReportFileError(path, "no such file")
    if path.stat().st_size == 0:
        raise ReportFileError(path, "the file is empty")
    with path.open("rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            raise ReportFileError(path, "not a SQLite file (export .nsys-rep with: nsys export --type sqlite)")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        con.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.DatabaseError as err:
        con.close()
        raise ReportFileError(path, f"corrupt or truncated SQLite file ({err})") from err
    return con


def _schema_version(con: sqlite3.Connection, path: Path, tables: set[str]) -> str:
    if "META_DATA_EXPORT" not in tables:
        raise ReportFileError(path, "not an Nsight Systems export (no META_DATA_EXPORT table)")
    version = ""
    for row in con.execute("select * from META_DATA_EXPORT"):
        if "EXPORT_SCHEMA_VERSION" in row:
            version = str(row[row.index("EXPORT_SCHEMA_VERSION") + 1])
    if not version:
        raise ReportFileError(path, "Nsight Systems export without EXPORT_SCHEMA_VERSION")
    major = version.split(".")[0]
    if major != str(SUPPORTED_MAJOR):
        raise ReportFileError(path, f"export schema version {version} is not supported (perfgate reads "
                                    f"{SUPPORTED_MAJOR}.x); re-export with a matching nsys or upgrade perfgate")
    return version


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"pragma table_info({table})")}


def _require_columns(con: sqlite3.Connection, path: Path, table: str, needed: tuple[str, ...]) -> None:
    missing = [c for c in needed if c not in _columns(con, table)]
    if missing:
        raise ReportFileError(path, f"{table} lacks column(s) {missing}; unsupported nsys export")


def _kernels(con: sqlite3.Connection, tables: set[str]) -> list[KernelLaunch]:
    cols = _columns(con, KERNEL_TABLE)
    opt = {c: (f"k.{c}" if c in cols else "NULL") for c in (
        "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
        "dynamicSharedMemory", "streamId", "deviceId")}
    nvtx_sql = "''"
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables and "NVTX_EVENTS" in tables:
        # push/pop ranges on the launching thread enclosing the launch call, outermost first
        # (joined with the unit separator, which range names do not contain)
        nvtx_sql = f"""(select group_concat(txt, char(31)) from (select coalesce(n.text, ns.value) as txt
            from CUPTI_ACTIVITY_KIND_RUNTIME r
            join NVTX_EVENTS n on n.globalTid = r.globalTid and n.start <= r.start and n.end >= r.end
                 and n.eventType = {PUSH_POP}
            left join StringIds ns on ns.id = n.textId
            where r.correlationId = k.correlationId and (r.globalTid & 0xFFFFFFFFFF000000) = k.globalPid
            order by n.start asc))"""
    sql = f"""select s.value, k.start, k.end, {opt['gridX']}, {opt['gridY']}, {opt['gridZ']}, {opt['blockX']},
        {opt['blockY']}, {opt['blockZ']}, {opt['registersPerThread']}, {opt['staticSharedMemory']},
        {opt['dynamicSharedMemory']}, {opt['streamId']}, {opt['deviceId']}, {nvtx_sql}
        from {KERNEL_TABLE} k join StringIds s on s.id = k.demangledName order by k.start"""
    out = []
    for r in con.execute(sql):
        shared = None if r[10] is None and r[11] is None else (r[10] or 0) + (r[11] or 0)
        stack = tuple(r[14].split("\x1f")) if r[14] else ()
        out.append(KernelLaunch(name=r[0], start_ns=r[1], end_ns=r[2], grid=(r[3] or 0, r[4] or 0, r[5] or 0),
                                block=(r[6] or 0, r[7] or 0, r[8] or 0), registers_per_thread=r[9],
                                shared_mem_bytes=shared, stream=r[12], device=r[13],
                                nvtx_range=stack[-1] if stack else "", nvtx_stack=stack))
    return out


def _memory_ops(con: sqlite3.Connection, tables: set[str]) -> list[MemoryOp]:
    out = []
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
        kinds = dict(_COPY_KINDS)
        if "ENUM_CUDA_MEMCPY_OPER" in tables and "label" in _columns(con, "ENUM_CUDA_MEMCPY_OPER"):
            kinds.update({i: str(label) for i, label in con.execute("select id, label from ENUM_CUDA_MEMCPY_OPER")})
        for kind, nbytes, start, end in con.execute(
                "select copyKind, bytes, start, end from CUPTI_ACTIVITY_KIND_MEMCPY order by start"):
            out.append(MemoryOp(kind=kinds.get(kind, f"copy kind {kind}"), bytes=nbytes, start_ns=start, end_ns=end))
    if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
        for nbytes, start, end in con.execute("select bytes, start, end from CUPTI_ACTIVITY_KIND_MEMSET order by start"):
            out.append(MemoryOp(kind="memset", bytes=nbytes, start_ns=start, end_ns=end))
    return sorted(out, key=lambda m: m.start_ns)


def _api_calls(con: sqlite3.Connection, tables: set[str]) -> list[ApiCall]:
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in tables:
        return []
    return [ApiCall(name=api_name(n), start_ns=s, end_ns=e) for n, s, e in con.execute(
        "select s.value, r.start, r.end from CUPTI_ACTIVITY_KIND_RUNTIME r join StringIds s on s.id = r.nameId "
        "order by r.start")]


def _nvtx(con: sqlite3.Connection, tables: set[str]) -> list[NvtxRange]:
    if "NVTX_EVENTS" not in tables:
        return []
    sql = f"""select coalesce(n.text, s.value), n.start, n.end, n.eventType from NVTX_EVENTS n
        left join StringIds s on s.id = n.textId
        where n.eventType in ({PUSH_POP}, {START_END}) and n.end is not null order by n.start"""
    return [NvtxRange(text=t or "", start_ns=s, end_ns=e, style="PushPop" if et == PUSH_POP else "StartEnd")
            for t, s, e, et in con.execute(sql)]


def _gpu_name(con: sqlite3.Connection, tables: set[str]) -> str:
    if "TARGET_INFO_GPU" not in tables or "name" not in _columns(con, "TARGET_INFO_GPU"):
        return ""
    row = con.execute("select name from TARGET_INFO_GPU limit 1").fetchone()
    return str(row[0]) if row else ""
