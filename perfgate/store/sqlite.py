"""The embedded history: one SQLite file, through the standard library's sqlite3 (nothing to install).

Several CI jobs may store to one file at once, so the database runs in WAL mode, every write is one
`BEGIN IMMEDIATE` transaction (the write lock is taken before anything is read, so two writers queue
instead of failing half-way) and waits its turn while the other writers keep committing (begin_immediate).
A run's rows are prepared before its transaction begins (store/prepared.py), so the lock is held for the
inserts alone. One run is one transaction: a crash, Ctrl-C,
`kill -9` or a full disk mid-write leaves the history as it was before the run. A read-only history is
opened without writing anything (an older schema is migrated in a private in-memory copy).
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from perfgate.errors import StoreError
from perfgate.inputs import check_regular_file, readonly_sqlite_uri
from perfgate.store.database import Backend, Dialect, Params
from perfgate.store.migrate import migrate, schema_version
from perfgate.store.schema import SCHEMA_VERSION
from perfgate.store.verify import precheck, verify_schema

# A writer gives up when no other write has finished for this long (one stuck or dead holder of the lock),
# not when its own wait is this long: a fleet of writers queues for the one write lock as long as the queue
# moves (16 writers of 5,000-case runs at load 22 had the last one wait past 120 s).
BUSY_TIMEOUT_S = 120.0
BEGIN_SLICE_S = 2.0  # SQLite's own busy wait per attempt, between looks at whether the queue moved
PAGE_SIZE = 16384  # new histories; `db prune` moves older ones to it as it compacts them


class SqliteDatabase:
    backend = Backend.SQLITE
    dialect = Dialect(Backend.SQLITE)

    def __init__(self, con: sqlite3.Connection, path: Path, readonly: bool) -> None:
        self.con = con
        self.path = path
        self.readonly = readonly
        self.queries = 0
        self.rows_read = 0

    def rows(self, sql: str, params: Params | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(sql, params or {})
        self.queries += 1
        names = [d[0] for d in cur.description]
        found = [dict(zip(names, r)) for r in cur.fetchall()]
        self.rows_read += len(found)
        return found

    def tuples(self, sql: str, params: Params | None = None) -> Iterator[tuple[Any, ...]]:
        self.queries += 1
        for row in self.con.execute(sql, params or {}):
            self.rows_read += 1
            yield row

    def execute(self, sql: str, params: Params | None = None) -> int:
        self.queries += 1
        return self.con.execute(sql, params or {}).rowcount

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        self.queries += 1
        self.con.executemany(sql, rows)

    def insert_id(self, sql: str, params: Params) -> int | None:
        self.queries += 1
        cur = self.con.execute(sql, params)
        return int(cur.lastrowid) if cur.rowcount == 1 and cur.lastrowid else None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        begin_immediate(self.con)
        try:
            yield
            self.con.execute("COMMIT")
        except BaseException:
            if self.con.in_transaction:  # SQLite has already rolled back on a full disk: its error is the one
                self.con.execute("ROLLBACK")
            raise

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())

    def describe_error(self, err: BaseException) -> str | None:
        return describe_sqlite_error(err)

    def close(self) -> None:
        self.con.close()


def open_sqlite(path: Path, readonly: bool) -> SqliteDatabase:
    """Writable: created (with its directory) and migrated as needed. Read-only: must exist; creates
    nothing."""
    if readonly:
        return _open_readonly(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(
            f"perfgate: cannot create the history's directory {path.parent}: {err.strerror or err}"
        ) from err
    if path.exists():
        check_regular_file(path, _store_error)
    con = _connect(path, f"file:{quote(str(path))}?mode=rwc")
    try:
        with _errors(path, "open it"):
            precheck(con, path)
            # a new file gets large pages: a case row (~2 KB with 200 samples) then never wastes most of a
            # 4 KB page when it grows past half of one (set before anything is written, or it is ignored)
            con.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            enable_wal(con)
            con.execute("PRAGMA synchronous=NORMAL")
            migrate(con, path)
            verify_schema(con, path)
    except BaseException:
        con.close()
        raise
    return SqliteDatabase(con, path, readonly=False)


def enable_wal(
    con: sqlite3.Connection,
    clock: Callable[[], float] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> None:
    """`PRAGMA journal_mode=WAL`, retried while another process holds the lock. Switching a new file to WAL
    needs its exclusive lock, and SQLite refuses it at once, without its busy wait, while another connection
    holds the write lock (waiting could deadlock): writers opening one new history together (a fleet's first
    run) would fail in the same millisecond. Refused once BUSY_TIMEOUT_S have passed; a no-op on a history
    already in WAL mode."""
    clock, sleep = clock or time.monotonic, sleep or time.sleep  # looked up per call: a test's stand-ins
    jitter = random.Random()  # noqa: S311 (a pause, not a secret)
    started = clock()
    while True:
        try:
            con.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except sqlite3.OperationalError as err:
            if not str(getattr(err, "sqlite_errorname", "")).startswith("SQLITE_BUSY"):
                raise
            if clock() - started >= BUSY_TIMEOUT_S:
                raise
        sleep(jitter.uniform(0.01, 0.05))


def begin_immediate(
    con: sqlite3.Connection,
    slice_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """BEGIN IMMEDIATE (the write lock before anything is read), waiting its turn behind other writers for
    as long as they keep committing (`PRAGMA data_version` moves with every other connection's commit);
    refused (SQLITE_BUSY) once no write has finished for BUSY_TIMEOUT_S. Each attempt waits `slice_s` in
    SQLite's busy handler, then a random pause: writers refused together do not all retry together."""
    jitter = random.Random()  # noqa: S311 (a pause, not a secret)
    seen, moved_at = _data_version(con), clock()
    con.execute(f"PRAGMA busy_timeout = {int((BEGIN_SLICE_S if slice_s is None else slice_s) * 1000)}")
    try:
        while True:
            try:
                con.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as err:
                if not str(getattr(err, "sqlite_errorname", "")).startswith("SQLITE_BUSY"):
                    raise
                version, now = _data_version(con), clock()
                if version != seen:
                    seen, moved_at = version, now
                elif now - moved_at >= BUSY_TIMEOUT_S:
                    raise
            sleep(jitter.uniform(0.0, 0.05))
    finally:
        con.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")


def _data_version(con: sqlite3.Connection) -> int:
    return int(con.execute("PRAGMA data_version").fetchone()[0])


def describe_sqlite_error(err: BaseException) -> str | None:
    if isinstance(err, sqlite3.OperationalError):
        # only SQLITE_BUSY is another process; SQLITE_LOCKED ("database table is locked") is this
        # connection getting in its own way, and says so in its own words
        name = str(getattr(err, "sqlite_errorname", ""))
        if name.startswith("SQLITE_BUSY"):
            return f"locked by another process, with no write finished for {BUSY_TIMEOUT_S:.0f} s"
        if name == "SQLITE_FULL":
            return f"the disk is full ({err}); nothing of it was written"
        return str(err)
    if isinstance(err, sqlite3.DatabaseError):
        return str(err)
    return None


def _store_error(path: Path, problem: str) -> StoreError:
    return StoreError(f"perfgate: history {path}: {problem}")


@contextlib.contextmanager
def _errors(path: Path, doing: str) -> Iterator[None]:
    try:
        yield
    except (sqlite3.DatabaseError, ValueError, KeyError, TypeError) as err:
        why = describe_sqlite_error(err) or str(err)
        raise StoreError(f"perfgate: history {path}: cannot {doing}: {why}") from err


def _connect(path: Path, uri: str) -> sqlite3.Connection:
    try:
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE), never opened behind our back
        con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        con.execute("PRAGMA foreign_keys=ON")
        return con
    except sqlite3.DatabaseError as err:
        raise StoreError(f"perfgate: cannot open history {path}: {err}") from err


def readonly_uri(path: Path) -> str:
    """How a command that only reads opens the history without creating a file beside it (the -wal and
    -shm that `mode=ro` alone leaves): perfgate.inputs.readonly_sqlite_uri, shared with the nsys reader."""
    return readonly_sqlite_uri(path)


def _open_readonly(path: Path) -> SqliteDatabase:
    if not path.exists():
        raise StoreError(f"perfgate: no history at {path}")
    check_regular_file(path, _store_error)
    con = _connect(path, readonly_uri(path))
    try:
        with _errors(path, "open it"):
            precheck(con, path)
            version = schema_version(con, path)
            if version < SCHEMA_VERSION:  # read an old history without touching the file
                memory = sqlite3.connect(":memory:", isolation_level=None)
                con.backup(memory)
                con.close()
                con = memory
                migrate(con, path)
            verify_schema(con, path)
    except BaseException:
        con.close()
        raise
    return SqliteDatabase(con, path, readonly=True)
