"""The SQLite history, with a versioned schema of frozen SQL (store/schema.py).

Several CI jobs may store to one history at once, so the database runs in WAL mode, every write is one
`BEGIN IMMEDIATE` transaction (the write lock is taken before anything is read, so two writers queue
instead of failing half-way) and waits on a busy timeout. One run is one transaction: a crash, Ctrl-C,
`kill -9` or a full disk mid-write leaves the history as it was before the run. Every SQLite problem
reaches the user as one StoreError line naming the file.
"""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from perfgate.errors import StoreError
from perfgate.inputs import check_regular_file
from perfgate.model import CaseResult, Metric, Run, Speedup
from perfgate.store import rows
from perfgate.store.schema import MIGRATIONS, REQUIRED_COLUMNS, SCHEMA_VERSION

BUSY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class HistoryPoint:
    run_id: int
    started_at: str
    git_commit: str
    median_ms: float
    q1_ms: float
    q3_ms: float


class Store:
    """The run history. Open with `open_store(path)`; use as a context manager or call close()."""

    def __init__(self, con: sqlite3.Connection, path: Path, readonly: bool) -> None:
        self.con = con
        self.path = path
        self.readonly = readonly

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as err:
            locked = "locked" in str(err) or "busy" in str(err)
            why = f"locked by another process for more than {BUSY_TIMEOUT_S:.0f} s" if locked else str(err)
            raise StoreError(f"perfgate: history {self.path}: cannot {doing}: {why}") from err
        except (sqlite3.DatabaseError, ValueError, KeyError, TypeError) as err:  # UnicodeDecodeError is a ValueError
            raise StoreError(f"perfgate: history {self.path}: cannot {doing}: {err}") from err

    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[dict[str, Any]]:
        with self._errors("read it"):
            cur = self.con.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]

    # --- writing ------------------------------------------------------------------------------------

    def save_run(self, run: Run) -> int:
        """Write the run and all its cases in one transaction; returns the new run id."""
        if self.readonly:
            raise StoreError(f"perfgate: history {self.path} is open read-only")
        if not run.info.run_uid:  # every stored run gets an identity, so merging it twice adds nothing
            run = replace(run, info=replace(run.info, run_uid=uuid.uuid4().hex))
        with self._errors("store the run"):
            self.con.execute("BEGIN IMMEDIATE")
            try:
                run_id = self._insert(run)
                self.con.execute("COMMIT")
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
        return run_id

    def _insert(self, run: Run) -> int:
        cur = self.con.execute(rows.insert_sql("runs", rows.RUN_COLUMNS), rows.run_row(run))
        run_id = int(cur.lastrowid or 0)
        res = run.results
        c = self.con
        c.executemany(rows.insert_sql("cases", rows.CASE_COLUMNS), (rows.case_row(run_id, r) for r in res))
        c.executemany("INSERT INTO samples (run_id, case_id, idx, time_ms) VALUES (?, ?, ?, ?)",
                      rows.sample_rows(run_id, res))
        c.executemany(rows.insert_sql("metrics", ("run_id", "case_id", "source", "kernel", "name", "value", "unit")),
                      rows.metric_rows(run_id, res))
        c.executemany(rows.insert_sql("gpu_state", ("run_id", "case_id", *rows.GPU_COLUMNS)), rows.gpu_rows(run_id,
                                                                                                            res))
        c.executemany("INSERT INTO autotune (run_id, case_id, kernel, config) VALUES (?, ?, ?, ?)",
                      rows.autotune_rows(run_id, res))
        c.executemany(rows.insert_sql("speedups", ("run_id", "case_id", "reference", "median", "ci_low", "ci_high")),
                      rows.speedup_rows(run_id, res))
        c.executemany("INSERT INTO reference_samples (run_id, case_id, idx, time_ms) VALUES (?, ?, ?, ?)",
                      rows.reference_sample_rows(run_id, res))
        c.executemany("INSERT INTO unmeasured_tests (run_id, nodeid, outcome, reason) VALUES (?, ?, ?, ?)",
                      rows.unmeasured_rows(run_id, run.info))
        return run_id

    # --- reading ------------------------------------------------------------------------------------

    def run_ids(self) -> list[int]:
        return [int(r["id"]) for r in self.query("SELECT id FROM runs ORDER BY id")]

    def has_run_uid(self, run_uid: str) -> bool:
        return bool(self.query("SELECT 1 FROM runs WHERE run_uid = ?", (run_uid,)))

    def load_run(self, run_id: int | None = None) -> Run:
        """One stored run (the latest when run_id is None)."""
        if run_id is None:
            latest = self.query("SELECT max(id) AS id FROM runs")
            if not latest or latest[0]["id"] is None:
                raise StoreError(f"perfgate: history {self.path} has no runs yet")
            run_id = int(latest[0]["id"])
        found = self.query("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not found:
            span = self.query("SELECT min(id) AS lo, max(id) AS hi FROM runs")[0]
            have = f"runs {span['lo']}..{span['hi']}" if span["lo"] is not None else "no runs"
            raise StoreError(f"perfgate: history {self.path} has no run {run_id} ({have})")
        with self._errors(f"read run {run_id}"):
            unmeasured = tuple(rows.unmeasured_from_row(r) for r in self.query(
                "SELECT * FROM unmeasured_tests WHERE run_id = ? ORDER BY nodeid", (run_id,)))
            return rows.run_from_row(found[0], tuple(self._cases(run_id)), unmeasured)

    def _cases(self, run_id: int) -> Iterator[CaseResult]:
        samples = self._grouped("SELECT case_id, time_ms FROM samples WHERE run_id = ? ORDER BY case_id, idx", run_id)
        refs = self._grouped("SELECT case_id, time_ms FROM reference_samples WHERE run_id = ? ORDER BY case_id, idx",
                             run_id)
        metrics: dict[str, list[Metric]] = {}
        for r in self.query("SELECT * FROM metrics WHERE run_id = ? ORDER BY case_id, source, kernel, name", (run_id,)):
            metrics.setdefault(r["case_id"], []).append(
                Metric(name=r["name"], value=r["value"], unit=r["unit"] or "", source=r["source"] or "",
                       kernel=r["kernel"] or ""))
        gpu = {r["case_id"]: rows.gpu_from_row(r) for r in self.query("SELECT * FROM gpu_state WHERE run_id = ?",
                                                                      (run_id,))}
        autotune: dict[str, list[tuple[str, str]]] = {}
        for r in self.query("SELECT * FROM autotune WHERE run_id = ? ORDER BY case_id, kernel", (run_id,)):
            autotune.setdefault(r["case_id"], []).append((r["kernel"], r["config"]))
        speedups = {r["case_id"]: Speedup(r["reference"], tuple(refs.get(r["case_id"], ())), r["median"], r["ci_low"],
                                          r["ci_high"])
                    for r in self.query("SELECT * FROM speedups WHERE run_id = ?", (run_id,))}
        for r in self.query("SELECT * FROM cases WHERE run_id = ? ORDER BY case_id", (run_id,)):
            cid = r["case_id"]
            yield rows.case_from_row(r, tuple(samples.get(cid, ())), tuple(metrics.get(cid, ())), gpu.get(cid),
                                     tuple(autotune.get(cid, ())), speedups.get(cid))

    def _grouped(self, sql: str, run_id: int) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        with self._errors("read samples"):
            for case_id, value in self.con.execute(sql, (run_id,)):
                out.setdefault(case_id, []).append(value)
        return out

    def history(self, case_id: str, device_name: str | None = None, limit: int = 50,
                up_to_run: int | None = None) -> list[HistoryPoint]:
        """Median time of one case over the last `limit` runs (up to run `up_to_run`: a re-gated older run
        is charted against its own past, not later runs), oldest first (for trend charts)."""
        sql = ("SELECT r.id AS run_id, r.started_at, r.git_commit, c.median_ms, c.q1_ms, c.q3_ms "
               "FROM cases c JOIN runs r ON r.id = c.run_id WHERE c.case_id = ?")
        params: list[Any] = [case_id]
        if device_name:
            sql += " AND r.device_name = ?"
            params.append(device_name)
        if up_to_run is not None:
            sql += " AND r.id <= ?"
            params.append(up_to_run)
        sql += " ORDER BY r.id DESC LIMIT ?"
        params.append(limit)
        found = [HistoryPoint(int(r["run_id"]), r["started_at"] or "", r["git_commit"] or "", r["median_ms"],
                              r["q1_ms"], r["q3_ms"]) for r in self.query(sql, params)]
        return list(reversed(found))


def open_store(path: Path, readonly: bool = False) -> Store:
    """Open the history. Writable: created (with its directory) and migrated as needed. Read-only: must
    exist; creates nothing; an older schema is migrated in a private in-memory copy."""
    path = Path(path)
    if readonly:
        return _open_readonly(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(f"perfgate: cannot create the history's directory {path.parent}: "
                         f"{err.strerror or err}") from err
    if path.exists():
        check_regular_file(path, _store_error)
    con = _connect(path, f"file:{quote(str(path))}?mode=rwc")
    store = Store(con, path, readonly=False)
    try:
        with store._errors("open it"):
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            _migrate(con, path)
            check_schema(con, path)
    except BaseException:
        con.close()
        raise
    return store


def _store_error(path: Path, problem: str) -> StoreError:
    return StoreError(f"perfgate: history {path}: {problem}")


def _connect(path: Path, uri: str) -> sqlite3.Connection:
    try:
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE), never opened behind our back
        con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        con.execute("PRAGMA foreign_keys=ON")
        return con
    except sqlite3.DatabaseError as err:
        raise StoreError(f"perfgate: cannot open history {path}: {err}") from err


def _open_readonly(path: Path) -> Store:
    if not path.exists():
        raise StoreError(f"perfgate: no history at {path}")
    check_regular_file(path, _store_error)
    con = _connect(path, f"file:{quote(str(path))}?mode=ro")
    store = Store(con, path, readonly=True)
    try:
        with store._errors("open it"):
            version = _schema_version(con, path)
            if version < SCHEMA_VERSION:  # read an old history without touching the file
                memory = sqlite3.connect(":memory:", isolation_level=None)
                con.backup(memory)
                con.close()
                con = store.con = memory
                _migrate(con, path)
            check_schema(con, path)
    except BaseException:
        store.con.close()
        raise
    return store


def _schema_version(con: sqlite3.Connection, path: Path) -> int:
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "perfgate_meta" not in tables:
        if tables:
            raise StoreError(f"perfgate: history {path}: not a perfgate history (it has other tables and no "
                             f"perfgate_meta); refusing to touch it")
        return 0
    row = con.execute("SELECT value FROM perfgate_meta WHERE key = 'schema_version'").fetchone()
    try:
        version = int(row[0]) if row else 0
    except (TypeError, ValueError):
        raise StoreError(f"perfgate: history {path}: unreadable schema version {row[0]!r}") from None
    if version > SCHEMA_VERSION:
        raise StoreError(f"perfgate: history {path} has schema version {version}, newer than this perfgate "
                         f"understands ({SCHEMA_VERSION}); upgrade perfgate")
    if version < 0:
        raise StoreError(f"perfgate: history {path}: invalid schema version {version}")
    return version


def _migrate(con: sqlite3.Connection, path: Path) -> None:
    """Bring the schema to SCHEMA_VERSION in one IMMEDIATE transaction (concurrent openers queue, and the
    second finds the work done)."""
    con.execute("BEGIN IMMEDIATE")
    try:
        version = _schema_version(con, path)
        for number in range(version, SCHEMA_VERSION):
            for statement in _statements(MIGRATIONS[number]):
                con.execute(statement)
            con.execute("INSERT OR REPLACE INTO perfgate_meta (key, value) VALUES ('schema_version', ?)",
                        (str(number + 1),))
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    if buffer.strip():
        raise ValueError("incomplete SQL statement in a migration")


def check_schema(con: sqlite3.Connection, path: Path) -> None:
    """Refuse a history whose tables lack what this version reads (renamed or dropped columns)."""
    for table, needed in REQUIRED_COLUMNS.items():
        have = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
        if not have:
            raise StoreError(f"perfgate: history {path}: table {table!r} is missing; not a usable perfgate history")
        missing = [c for c in needed if c not in have]
        if missing:
            raise StoreError(f"perfgate: history {path}: table {table!r} lacks column(s) {missing}")
