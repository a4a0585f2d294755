"""An Nsight Systems SQLite export (`nsys export --type sqlite`), opened and validated: the tables, the
string table and the names in it, shared by the two readers (parse/nsys_sqlite.py's timeline and
analyze/nsys_summary.py's SQL aggregation).

The export schema is versioned (META_DATA_EXPORT / EXPORT_SCHEMA_VERSION, e.g. 3.20.3): micro bumps only
add, so we accept major 3 and probe the columns we need. A table exists only when it has rows (no memsets
-> no CUPTI_ACTIVITY_KIND_MEMSET), so absent tables mean "none", not an error.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from perfgate.errors import ReportFileError
from perfgate.inputs import check_regular_file, readonly_sqlite_uri
from perfgate.parse.invariants import printable

SUPPORTED_MAJOR = 3
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
NVTX_TABLE = "NVTX_EVENTS"
KERNEL_COLUMNS = ("start", "end", "correlationId", "globalPid", "demangledName")
PUSH_POP, START_END = 59, 60
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
