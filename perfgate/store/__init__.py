"""The SQLite history, with a versioned schema of frozen SQL (store/schema.py).

Several CI jobs may store to one history at once, so the database runs in WAL mode, every write is one
`BEGIN IMMEDIATE` transaction (the write lock is taken before anything is read, so two writers queue
instead of failing half-way) and waits on a busy timeout. One run is one transaction: a crash, Ctrl-C,
`kill -9` or a full disk mid-write leaves the history as it was before the run. Every SQLite problem
reaches the user as one StoreError line naming the file.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from perfgate.errors import StoreError
from perfgate.inputs import check_regular_file
from perfgate.model import CaseResult, Metric, Run, Verdict
from perfgate.store import checks, kernels, rows
from perfgate.store.migrate import migrate, schema_version
from perfgate.store.schema import SCHEMA_VERSION
from perfgate.store.verdicts import RunVerdicts
from perfgate.store.verify import precheck, verify_schema

BUSY_TIMEOUT_S = 120.0
MAX_RUN_ID = 1 << 62  # beyond any run: a window that may hold none
PAGE_SIZE = 16384  # new histories; `db prune` moves older ones to it as it compacts them


@dataclass(frozen=True)
class HistoryPoint:
    run_id: int
    started_at: str
    git_commit: str
    median_ms: float
    q1_ms: float
    q3_ms: float


@dataclass(frozen=True)
class PinnedRun:
    """A run `db prune` never removes, and why (a change point writes one)."""

    run_id: int
    reason: str
    pinned_at: str  # ISO 8601 UTC


@dataclass(frozen=True)
class AcceptedChange:
    """A step in one case's history that someone accepted: its noise window starts at `run_id`."""

    case_id: str
    device_name: str
    run_id: int  # the first run after the step
    change_pct: float
    accepted_at: str  # ISO 8601 UTC
    reason: str


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
    def errors(self, doing: str) -> Iterator[None]:
        """Every SQLite problem, and every stored value that fails its check, as one StoreError line naming
        the file and what was being done."""
        try:
            yield
        except sqlite3.OperationalError as err:
            # only SQLITE_BUSY is another process; SQLITE_LOCKED ("database table is locked") is this
            # connection getting in its own way, and says so in its own words
            name = str(getattr(err, "sqlite_errorname", ""))
            why = (
                f"locked by another process for more than {BUSY_TIMEOUT_S:.0f} s"
                if name.startswith("SQLITE_BUSY")
                else f"the disk is full ({err}); nothing of it was written"
                if name == "SQLITE_FULL"
                else str(err)
            )
            raise StoreError(f"perfgate: history {self.path}: cannot {doing}: {why}") from err
        except (sqlite3.DatabaseError, ValueError, KeyError, TypeError) as err:  # UnicodeDecodeError is a ValueError
            raise StoreError(f"perfgate: history {self.path}: cannot {doing}: {err}") from err

    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[dict[str, Any]]:
        with self.errors("read it"):
            cur = self.con.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]

    # --- writing ------------------------------------------------------------------------------------

    def save_run(self, run: Run, verdicts: RunVerdicts | None = None) -> int:
        """Write the run, all its cases and (when gated) its verdicts in one transaction; returns the new
        run id."""
        return self.save_runs([(run, verdicts)])[0]

    def save_runs(self, runs: list[tuple[Run, RunVerdicts | None]]) -> list[int]:
        """Several runs in one transaction (a merge): all stored, or none."""
        if self.readonly:
            raise StoreError(f"perfgate: history {self.path} is open read-only")
        with self.errors("store the run"):
            self.con.execute("BEGIN IMMEDIATE")
            try:
                ids = [self._insert(run, verdicts) for run, verdicts in runs]
                self.con.execute("COMMIT")
            except BaseException:
                if self.con.in_transaction:  # SQLite has already rolled back on a full disk: its error is the one
                    self.con.execute("ROLLBACK")
                raise
        return ids

    def _insert(self, run: Run, verdicts: RunVerdicts | None) -> int:
        if not run.info.run_uid:  # every stored run gets an identity, so merging it twice adds nothing
            run = replace(run, info=replace(run.info, run_uid=uuid.uuid4().hex))
        c = self.con
        cur = c.execute(
            rows.insert_sql("runs", (*rows.RUN_COLUMNS, "gate_failed")),
            (*rows.run_row(run), None if verdicts is None else int(verdicts.gate_failed)),
        )
        run_id = int(cur.lastrowid or 0)
        res = run.results
        by_case = verdicts.by_case() if verdicts is not None else {}
        case_rows = [rows.case_row(run_id, r, _value(by_case.get(r.case_id))) for r in res]
        for row in case_rows:  # what is stored must read back: nothing non-finite, nothing out of range
            rows.check_case_row(dict(zip(rows.CASE_COLUMNS, row)))
        c.executemany(rows.insert_sql("cases", rows.CASE_COLUMNS), case_rows)
        c.executemany(
            rows.insert_sql("metrics", ("run_id", "case_id", "source", "kernel", "name", "value", "unit")),
            rows.metric_rows(run_id, res),
        )
        c.executemany(
            rows.insert_sql("gpu_state", ("run_id", "case_id", *rows.GPU_COLUMNS)), rows.gpu_rows(run_id, res)
        )
        c.executemany(
            "INSERT INTO autotune (run_id, case_id, kernel, config) VALUES (?, ?, ?, ?)",
            rows.autotune_rows(run_id, res),
        )
        c.executemany(rows.insert_sql("speedups", rows.SPEEDUP_COLUMNS), rows.speedup_rows(run_id, res))
        c.executemany(rows.insert_sql("compiled_cases", kernels.CASE_COLUMNS), kernels.case_rows(run_id, res))
        c.executemany(rows.insert_sql("kernels", kernels.KERNEL_COLUMNS), kernels.kernel_rows(run_id, res))
        c.executemany(
            "INSERT INTO unmeasured_tests (run_id, nodeid, outcome, reason) VALUES (?, ?, ?, ?)",
            rows.unmeasured_rows(run_id, run.info),
        )
        if verdicts is not None:
            c.executemany(
                rows.insert_sql("verdicts", rows.VERDICT_COLUMNS),
                (
                    (
                        run_id,
                        m.case_id,
                        m.metric,
                        m.kernel,
                        m.verdict.value,
                        _finite(m.change_pct),
                        _finite(m.threshold_pct),
                    )
                    for m in verdicts.metrics
                ),
            )
        return run_id

    def pin_run(self, run_id: int, reason: str, pinned_at: str) -> None:
        """Keep a run whatever `db prune` is asked (a change point, an incident); re-pinning replaces the
        reason."""
        if self.readonly:
            raise StoreError(f"perfgate: history {self.path} is open read-only")
        if not reason.strip():
            raise StoreError(f"perfgate: history {self.path}: a pinned run needs a reason")
        with self.errors(f"pin run {run_id}"):
            if not self.query("SELECT 1 FROM runs WHERE id = ?", (run_id,)):
                raise StoreError(f"perfgate: history {self.path} has no run {run_id} to pin")
            self.con.execute(
                "INSERT OR REPLACE INTO pinned_runs (run_id, reason, pinned_at) VALUES (?, ?, ?)",
                (run_id, reason, pinned_at),
            )

    def accept_change(self, change: AcceptedChange) -> None:
        """Record an accepted change point (and pin its run: prune never removes what a window starts at)."""
        if self.readonly:
            raise StoreError(f"perfgate: history {self.path} is open read-only")
        if not change.reason.strip():
            raise StoreError(f"perfgate: history {self.path}: an accepted change point needs a reason")
        self.pin_run(change.run_id, f"change point {change.case_id}: {change.reason}", change.accepted_at)
        with self.errors(f"accept a change point at run {change.run_id}"):
            self.con.execute(
                "INSERT OR REPLACE INTO change_points (case_id, device_name, run_id, change_pct, "
                "accepted_at, reason) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    change.case_id,
                    change.device_name,
                    change.run_id,
                    change.change_pct,
                    change.accepted_at,
                    change.reason,
                ),
            )

    def accepted_changes(self) -> tuple[AcceptedChange, ...]:
        rows = self.query(
            "SELECT case_id, device_name, run_id, change_pct, accepted_at, reason FROM change_points "
            "ORDER BY case_id, device_name, run_id"
        )
        with self.errors("read the accepted change points"):
            return tuple(
                AcceptedChange(
                    checks.case_id(r["case_id"], "change_points"),
                    checks.text(r["device_name"], "change_points"),
                    int(r["run_id"]),
                    checks.number(r["change_pct"], "change_points change_pct", low=-100.0),
                    checks.text(r["accepted_at"], "change_points"),
                    checks.text(r["reason"], "change_points"),
                )
                for r in rows
            )

    def window_starts(self, device_name: str, case_ids: Iterable[str], after: str = "") -> dict[str, int]:
        """Per case, the first run its noise window may hold: after its latest accepted change point, and
        after `after` (the baseline's last update, ISO 8601): processes of other code stay out."""
        floor = 0
        if after:
            first = self.query("SELECT min(id) AS id FROM runs WHERE started_at > ?", (after,))
            floor = int(first[0]["id"]) if first and first[0]["id"] is not None else MAX_RUN_ID
        starts = dict.fromkeys(case_ids, floor)
        for c in self.accepted_changes():
            if c.device_name == device_name and c.case_id in starts:
                starts[c.case_id] = max(starts[c.case_id], c.run_id)
        return starts

    def pinned_runs(self) -> tuple[PinnedRun, ...]:
        return tuple(
            PinnedRun(int(r["run_id"]), str(r["reason"]), str(r["pinned_at"]))
            for r in self.query("SELECT run_id, reason, pinned_at FROM pinned_runs ORDER BY run_id")
        )

    # --- reading ------------------------------------------------------------------------------------

    def run_ids(self) -> list[int]:
        return [int(r["id"]) for r in self.query("SELECT id FROM runs ORDER BY id")]

    def has_run_uid(self, run_uid: str) -> bool:
        return bool(self.query("SELECT 1 FROM runs WHERE run_uid = ?", (run_uid,)))

    def load_run(self, run_id: int | None = None) -> Run:
        """One stored run (the latest when run_id is None), every value re-validated."""
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
        with self.errors(f"read run {run_id}"):
            unmeasured = tuple(
                rows.unmeasured_from_row(r)
                for r in self.query("SELECT * FROM unmeasured_tests WHERE run_id = ? ORDER BY nodeid", (run_id,))
            )
            return rows.run_from_row(found[0], tuple(self._cases(run_id)), unmeasured)

    def _cases(self, run_id: int) -> Iterator[CaseResult]:
        metrics: dict[str, list[Metric]] = {}
        for r in self.query("SELECT * FROM metrics WHERE run_id = ? ORDER BY case_id, source, kernel, name", (run_id,)):
            metrics.setdefault(r["case_id"], []).append(rows.metric_from_row(r))
        gpu = {
            r["case_id"]: rows.gpu_from_row(r)
            for r in self.query("SELECT * FROM gpu_state WHERE run_id = ?", (run_id,))
        }
        autotune: dict[str, list[tuple[str, str]]] = {}
        for r in self.query("SELECT * FROM autotune WHERE run_id = ? ORDER BY case_id, kernel", (run_id,)):
            autotune.setdefault(r["case_id"], []).append((str(r["kernel"]), str(r["config"])))
        speedups = {
            r["case_id"]: rows.speedup_from_row(r)
            for r in self.query("SELECT * FROM speedups WHERE run_id = ?", (run_id,))
        }
        compiled = kernels.compiled_from_rows(
            self.query("SELECT * FROM compiled_cases WHERE run_id = ?", (run_id,)),
            self.query("SELECT * FROM kernels WHERE run_id = ?", (run_id,)),
        )
        for r in self.query("SELECT * FROM cases WHERE run_id = ? ORDER BY case_id", (run_id,)):
            cid = r["case_id"]
            case = rows.case_from_row(
                r, tuple(metrics.get(cid, ())), gpu.get(cid), tuple(autotune.get(cid, ())), speedups.get(cid)
            )
            yield replace(case, compiled=compiled.get(cid))

    def load_verdicts(self, run_id: int) -> RunVerdicts | None:
        """What the gate said when the run was stored; None for a run that was not gated (a calibration,
        an import, or one stored before verdicts were)."""
        found = self.query("SELECT gate_failed FROM runs WHERE id = ?", (run_id,))
        if not found or found[0]["gate_failed"] is None:
            return None
        with self.errors(f"read the verdicts of run {run_id}"):
            metrics = tuple(
                rows.verdict_from_row(r)
                for r in self.query(
                    "SELECT * FROM verdicts WHERE run_id = ? ORDER BY case_id, metric, kernel", (run_id,)
                )
            )
        return RunVerdicts(gate_failed=bool(found[0]["gate_failed"]), metrics=metrics)

    def history(
        self, case_id: str, device_name: str | None = None, limit: int = 50, up_to_run: int | None = None
    ) -> list[HistoryPoint]:
        """Median time of one case over the last `limit` runs (up to run `up_to_run`: a re-gated older run
        is charted against its own past, not later runs), oldest first (for trend charts). A/B runs are not
        part of a case's trend (store/ab_pairs.py)."""
        from perfgate.store.kinds import OUTSIDE_AB

        sql = (
            "SELECT r.id AS run_id, r.started_at, r.git_commit, c.median_ms, c.q1_ms, c.q3_ms "
            f"FROM cases c JOIN runs r ON r.id = c.run_id WHERE c.case_id = ? AND {OUTSIDE_AB}"
        )
        params: list[Any] = [case_id]
        if device_name:
            sql += " AND r.device_name = ?"
            params.append(device_name)
        if up_to_run is not None:
            sql += " AND r.id <= ?"
            params.append(up_to_run)
        sql += " ORDER BY r.id DESC LIMIT ?"
        params.append(limit)
        with self.errors(f"read the history of {case_id!r}"):
            found = [
                HistoryPoint(
                    int(r["run_id"]),
                    checks.run_time(r["started_at"], f"run {r['run_id']} started_at"),
                    checks.run_text(r["git_commit"], f"run {r['run_id']} git_commit"),
                    *(
                        checks.time_ms(r[c], f"run {r['run_id']} case {case_id!r} {c}")
                        for c in ("median_ms", "q1_ms", "q3_ms")
                    ),
                )
                for r in self.query(sql, params)
            ]
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
        raise StoreError(
            f"perfgate: cannot create the history's directory {path.parent}: {err.strerror or err}"
        ) from err
    if path.exists():
        check_regular_file(path, _store_error)
    con = _connect(path, f"file:{quote(str(path))}?mode=rwc")
    store = Store(con, path, readonly=False)
    try:
        with store.errors("open it"):
            precheck(con, path)
            # a new file gets large pages: a case row (~2 KB with 200 samples) then never wastes most of a
            # 4 KB page when it grows past half of one (set before anything is written, or it is ignored)
            con.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            migrate(con, path)
            verify_schema(con, path)
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


def readonly_uri(path: Path) -> str:
    """How a command that only reads opens the history without creating a file beside it. `mode=ro` alone
    still creates the WAL index (-shm) and an empty -wal: readers of a history nobody writes left both
    behind. Without a -wal or -shm file no writer is at work and every transaction is in the file itself,
    so it is opened `immutable` (no lock, no file created). With one (a writer is storing, or one died),
    `mode=ro` reads the log's committed transactions through the files already there."""
    wal, shm = (path.with_name(path.name + suffix) for suffix in ("-wal", "-shm"))
    immutable = "" if wal.exists() or shm.exists() else "&immutable=1"
    return f"file:{quote(str(path))}?mode=ro{immutable}"


def _open_readonly(path: Path) -> Store:
    if not path.exists():
        raise StoreError(f"perfgate: no history at {path}")
    check_regular_file(path, _store_error)
    con = _connect(path, readonly_uri(path))
    store = Store(con, path, readonly=True)
    try:
        with store.errors("open it"):
            precheck(con, path)
            version = schema_version(con, path)
            if version < SCHEMA_VERSION:  # read an old history without touching the file
                memory = sqlite3.connect(":memory:", isolation_level=None)
                con.backup(memory)
                con.close()
                con = store.con = memory
                migrate(con, path)
            verify_schema(con, path)
    except BaseException:
        store.con.close()
        raise
    return store


def _value(verdict: Verdict | None) -> str | None:
    return verdict.value if verdict is not None else None


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
