"""The run history: a SQLite file (embedded, the default) or a PostgreSQL server, with one versioned schema
of frozen SQL (store/schema.py) and one set of statements for both (store/database.py).

SQLite (store/sqlite.py): WAL mode, every write one `BEGIN IMMEDIATE` transaction behind a busy timeout, so
CI jobs sharing a file queue instead of failing half-way. A server (store/server.py): runners write side
by side, the server assigns run ids. On both, one run is one transaction (a crash, Ctrl-C, `kill -9` or a
full disk mid-write leaves the history as it was), a run's identity (`run_uid`) is stored once whatever
retries or merges bring it again, and every database problem reaches the user as one StoreError line
naming the history (a server's URL without its password).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfgate.errors import StoreError
from perfgate.model import CaseResult, Metric, Run
from perfgate.store import checks, kernels, rows
from perfgate.store.database import Backend, Database
from perfgate.store.prepared import prepare_run, write_prepared
from perfgate.store.target import HistoryTarget, ServerUrl, history_target
from perfgate.store.verdicts import RunVerdicts

MAX_RUN_ID = 1 << 62  # beyond any run: a window that may hold none


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
    """The run history. Open with `open_store(target)`; use as a context manager or call close()."""

    def __init__(self, db: Database, path: HistoryTarget, readonly: bool) -> None:
        self.db = db
        self.path = path  # a file, or a server URL whose text hides its password
        self.readonly = readonly

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    @property
    def dialect(self) -> Any:
        return self.db.dialect

    @property
    def on_server(self) -> bool:
        return self.db.backend is Backend.POSTGRESQL

    @contextlib.contextmanager
    def errors(self, doing: str) -> Iterator[None]:
        """Every database problem, and every stored value that fails its check, as one StoreError line naming
        the history and what was being done."""
        try:
            yield
        except StoreError:
            raise
        except Exception as err:
            why = self.db.describe_error(err)
            if why is None and not isinstance(err, (ValueError, KeyError, TypeError)):
                raise  # not the database's and not a stored value's: a bug, shown as one
            # UnicodeDecodeError is a ValueError
            raise StoreError(f"perfgate: history {self.path}: cannot {doing}: {why or err}") from err

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        with self.errors("read it"):
            return self.db.rows(sql, params)

    def _writable(self) -> None:
        if self.readonly:
            raise StoreError(f"perfgate: history {self.path} is open read-only")

    # --- writing ------------------------------------------------------------------------------------

    def save_run(self, run: Run, verdicts: RunVerdicts | None = None) -> int:
        """Write the run, all its cases and (when gated) its verdicts in one transaction; returns its run id
        (the stored one's, when a run of this identity is already there: a retried store adds nothing)."""
        return self.save_runs([(run, verdicts)])[0]

    def save_runs(self, runs: Sequence[tuple[Run, RunVerdicts | None]]) -> list[int]:
        """Several runs in one transaction (a merge): all stored, or none."""
        self._writable()
        with self.errors("store the run"):
            prepared = [prepare_run(run, verdicts) for run, verdicts in runs]  # before the write lock is taken
            with self.db.transaction():
                return [write_prepared(self.db, p) for p in prepared]

    def pin_run(self, run_id: int, reason: str, pinned_at: str) -> None:
        """Keep a run whatever `db prune` is asked (a change point, an incident); re-pinning replaces the
        reason."""
        self._writable()
        if not reason.strip():
            raise StoreError(f"perfgate: history {self.path}: a pinned run needs a reason")
        with self.errors(f"pin run {run_id}"):
            if not self.db.rows("SELECT 1 AS one FROM runs WHERE id = :id", {"id": run_id}):
                raise StoreError(f"perfgate: history {self.path} has no run {run_id} to pin")
            with self.db.transaction():
                self.db.execute(
                    "INSERT INTO pinned_runs (run_id, reason, pinned_at) VALUES (:run_id, :reason, :at) "
                    "ON CONFLICT (run_id) DO UPDATE SET reason = excluded.reason, pinned_at = excluded.pinned_at",
                    {"run_id": run_id, "reason": reason, "at": pinned_at},
                )

    def accept_change(self, change: AcceptedChange) -> None:
        """Record an accepted change point (and pin its run: prune never removes what a window starts at)."""
        self._writable()
        if not change.reason.strip():
            raise StoreError(f"perfgate: history {self.path}: an accepted change point needs a reason")
        self.pin_run(change.run_id, f"change point {change.case_id}: {change.reason}", change.accepted_at)
        with self.errors(f"accept a change point at run {change.run_id}"), self.db.transaction():
            self.db.execute(
                "INSERT INTO change_points (case_id, device_name, run_id, change_pct, accepted_at, reason) "
                "VALUES (:case_id, :device_name, :run_id, :change_pct, :accepted_at, :reason) "
                "ON CONFLICT (case_id, device_name, run_id) DO UPDATE SET change_pct = excluded.change_pct, "
                "accepted_at = excluded.accepted_at, reason = excluded.reason",
                {
                    "case_id": change.case_id,
                    "device_name": change.device_name,
                    "run_id": change.run_id,
                    "change_pct": change.change_pct,
                    "accepted_at": change.accepted_at,
                    "reason": change.reason,
                },
            )

    def accepted_changes(
        self, device_name: str | None = None, case_ids: Iterable[str] | None = None
    ) -> tuple[AcceptedChange, ...]:
        """The accepted change points (of one device model and these cases when given: read through the
        table's key, whatever else it holds)."""
        sql = "SELECT case_id, device_name, run_id, change_pct, accepted_at, reason FROM change_points"
        params: dict[str, Any] = {}
        if case_ids is not None:
            sql += f" WHERE case_id IN ({self.dialect.json_values('ids')})"
            params["ids"] = json.dumps(sorted(set(case_ids)))
            if device_name is not None:
                sql += " AND device_name = :device"
                params["device"] = device_name
        elif device_name is not None:
            sql += " WHERE device_name = :device"
            params["device"] = device_name
        found = self.query(sql + " ORDER BY case_id, device_name, run_id", params)
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
                for r in found
            )

    def window_starts(self, device_name: str, case_ids: Iterable[str], after: str = "") -> dict[str, int]:
        """Per case, the first run its noise window may hold: after its latest accepted change point, and
        after `after` (the baseline's last update, ISO 8601): processes of other code stay out."""
        floor = 0
        ids = list(case_ids)
        if after:
            first = self.query(
                "SELECT id FROM runs WHERE started_at > :after ORDER BY started_at, id LIMIT 1", {"after": after}
            )
            floor = int(first[0]["id"]) if first else MAX_RUN_ID
        starts = dict.fromkeys(ids, floor)
        for c in self.accepted_changes(device_name, ids):
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
        return bool(self.query("SELECT 1 AS one FROM runs WHERE run_uid = :uid", {"uid": run_uid}))

    def load_run(self, run_id: int | None = None) -> Run:
        """One stored run (the latest when run_id is None), every value re-validated."""
        if run_id is None:
            latest = self.query("SELECT max(id) AS id FROM runs")
            if not latest or latest[0]["id"] is None:
                raise StoreError(f"perfgate: history {self.path} has no runs yet")
            run_id = int(latest[0]["id"])
        key = {"run_id": run_id}
        found = self.query("SELECT * FROM runs WHERE id = :run_id", key)
        if not found:
            span = self.query("SELECT min(id) AS lo, max(id) AS hi FROM runs")[0]
            have = f"runs {span['lo']}..{span['hi']}" if span["lo"] is not None else "no runs"
            raise StoreError(f"perfgate: history {self.path} has no run {run_id} ({have})")
        with self.errors(f"read run {run_id}"):
            unmeasured = tuple(
                rows.unmeasured_from_row(r)
                for r in self.query("SELECT * FROM unmeasured_tests WHERE run_id = :run_id ORDER BY nodeid", key)
            )
            return rows.run_from_row(found[0], tuple(self._cases(run_id)), unmeasured)

    def _cases(self, run_id: int) -> Iterator[CaseResult]:
        key = {"run_id": run_id}
        metrics: dict[str, list[Metric]] = {}
        for r in self.query("SELECT * FROM metrics WHERE run_id = :run_id ORDER BY case_id, source, kernel, name", key):
            metrics.setdefault(r["case_id"], []).append(rows.metric_from_row(r))
        gpu = {
            r["case_id"]: rows.gpu_from_row(r)
            for r in self.query("SELECT * FROM gpu_state WHERE run_id = :run_id", key)
        }
        autotune: dict[str, list[tuple[str, str]]] = {}
        for r in self.query("SELECT * FROM autotune WHERE run_id = :run_id ORDER BY case_id, kernel", key):
            autotune.setdefault(r["case_id"], []).append((str(r["kernel"]), str(r["config"])))
        speedups = {
            r["case_id"]: rows.speedup_from_row(r)
            for r in self.query("SELECT * FROM speedups WHERE run_id = :run_id", key)
        }
        compiled = kernels.compiled_from_rows(
            self.query("SELECT * FROM compiled_cases WHERE run_id = :run_id", key),
            self.query("SELECT * FROM kernels WHERE run_id = :run_id", key),
        )
        for r in self.query("SELECT * FROM cases WHERE run_id = :run_id ORDER BY case_id", key):
            cid = r["case_id"]
            case = rows.case_from_row(
                r, tuple(metrics.get(cid, ())), gpu.get(cid), tuple(autotune.get(cid, ())), speedups.get(cid)
            )
            yield replace(case, compiled=compiled.get(cid))

    def load_verdicts(self, run_id: int) -> RunVerdicts | None:
        """What the gate said when the run was stored; None for a run that was not gated (a calibration,
        an import, or one stored before verdicts were)."""
        found = self.query("SELECT gate_failed FROM runs WHERE id = :run_id", {"run_id": run_id})
        if not found or found[0]["gate_failed"] is None:
            return None
        with self.errors(f"read the verdicts of run {run_id}"):
            metrics = tuple(
                rows.verdict_from_row(r)
                for r in self.query(
                    "SELECT * FROM verdicts WHERE run_id = :run_id ORDER BY case_id, metric, kernel", {"run_id": run_id}
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
            f"FROM cases c JOIN runs r ON r.id = c.run_id WHERE c.case_id = :case_id AND {OUTSIDE_AB}"
        )
        params: dict[str, Any] = {"case_id": case_id, "limit": limit}
        if device_name:
            sql += " AND r.device_name = :device"
            params["device"] = device_name
        if up_to_run is not None:
            sql += " AND c.run_id <= :up_to"
            params["up_to"] = up_to_run
        sql += " ORDER BY c.run_id DESC LIMIT :limit"
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

    def size_bytes(self) -> int:
        with self.errors("measure its size"):
            return self.db.size_bytes()


def open_store(target: HistoryTarget | str, readonly: bool = False) -> Store:
    """Open the history: a SQLite path or a PostgreSQL URL. Writable: created and migrated as needed.
    Read-only: must exist; writes nothing (a SQLite file of an older schema is migrated in a private
    in-memory copy)."""
    try:
        where = history_target(target)
    except ValueError as err:
        raise StoreError(f"perfgate: history: {err}") from None
    if isinstance(where, ServerUrl):
        from perfgate.store.server import open_server

        return Store(open_server(where, readonly), where, readonly)
    from perfgate.store.sqlite import open_sqlite

    return Store(open_sqlite(Path(where), readonly), where, readonly)


def history_exists(target: HistoryTarget) -> bool:
    """Whether there is a history to read: the file exists, or the server holds perfgate's tables (it is
    asked: a server is always there to write to)."""
    if isinstance(target, ServerUrl):
        from perfgate.store.server import server_has_history

        return server_has_history(target)
    return Path(target).exists()
