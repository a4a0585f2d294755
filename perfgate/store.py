"""The SQLite history (the only module that imports sqlite_utils), with a versioned schema.

One run is written in one transaction: a crash, Ctrl-C or a full disk mid-write leaves the history as
it was before the run, never a run with half its cases.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from perfgate.errors import StoreError
from perfgate.model import CaseResult, Environment, Metric, Run, RunInfo, Timer, TimingStats

SCHEMA_VERSION = 1


def _migrate_to_1(db: Any) -> None:
    env_cols = {f.name: str for f in fields(Environment)}
    info_cols = {f.name: (int if f.name == "git_dirty" else str) for f in fields(RunInfo)}
    info_cols.pop("hostname")  # the environment's hostname is the one that counts
    db["runs"].create({"id": int, **info_cols, **env_cols}, pk="id")
    stat_cols = {f.name: (str if f.name == "timer" else int if f.name == "n_samples" else float)
                 for f in fields(TimingStats)}
    db["cases"].create({"run_id": int, "case_id": str, **stat_cols, "bytes_moved": int, "flops": int,
                        "profile_errors": str}, pk=("run_id", "case_id"), foreign_keys=[("run_id", "runs", "id")])
    db["samples"].create({"run_id": int, "case_id": str, "idx": int, "time_ms": float},
                         pk=("run_id", "case_id", "idx"), foreign_keys=[("run_id", "runs", "id")])
    db["metrics"].create({"run_id": int, "case_id": str, "source": str, "kernel": str, "name": str,
                          "value": float, "unit": str},
                         pk=("run_id", "case_id", "source", "kernel", "name"),
                         foreign_keys=[("run_id", "runs", "id")])
    db["cases"].create_index(["case_id"])
    db["metrics"].create_index(["case_id", "name"])


# Append only: a migration, once released, is never edited; the next one moves version N to N+1.
MIGRATIONS: tuple[Callable[[Any], None], ...] = (_migrate_to_1,)


class Store:
    """The run history. Open with `open_store(path)`."""

    def __init__(self, db: Any, path: Path) -> None:
        self.db = db
        self.path = path

    def close(self) -> None:
        self.db.close()

    def save_run(self, run: Run) -> int:
        """Write the run and all its cases in one transaction; returns the new run id."""
        with self.db.atomic():
            info = asdict(run.info)
            info.pop("hostname")
            info["git_dirty"] = int(run.info.git_dirty)
            run_id = self.db["runs"].insert({**info, **asdict(run.environment)}).last_pk
            for res in run.results:
                self._insert_case(run_id, res)
        return int(run_id)

    def _insert_case(self, run_id: int, res: CaseResult) -> None:
        stats = asdict(res.timing)
        stats["timer"] = res.timing.timer.value
        self.db["cases"].insert({"run_id": run_id, "case_id": res.case_id, **stats, "bytes_moved": res.bytes_moved,
                                 "flops": res.flops, "profile_errors": json.dumps(list(res.profile_errors))})
        self.db["samples"].insert_all({"run_id": run_id, "case_id": res.case_id, "idx": i, "time_ms": v}
                                      for i, v in enumerate(res.samples_ms))
        self.db["metrics"].insert_all({"run_id": run_id, "case_id": res.case_id, "source": m.source,
                                       "kernel": m.kernel, "name": m.name, "value": m.value, "unit": m.unit}
                                      for m in res.metrics)

    def run_ids(self) -> list[int]:
        return [r["id"] for r in self.db.query("select id from runs order by id")]

    def load_run(self, run_id: int | None = None) -> Run:
        """One stored run (the latest when run_id is None)."""
        ids = self.run_ids()
        if not ids:
            raise StoreError(f"perfgate: history {self.path} has no runs yet")
        rid = ids[-1] if run_id is None else run_id
        rows = list(self.db.query("select * from runs where id = ?", [rid]))
        if not rows:
            raise StoreError(f"perfgate: history {self.path} has no run {rid} (runs: {ids[0]}..{ids[-1]})")
        row = rows[0]
        info = RunInfo(**{f.name: row.get(f.name, "") for f in fields(RunInfo) if f.name != "hostname"},
                       hostname=row["hostname"])
        info = RunInfo(**{**asdict(info), "git_dirty": bool(row["git_dirty"])})
        env = Environment(**{f.name: row[f.name] or "" for f in fields(Environment)})
        return Run(info=info, environment=env, results=tuple(self._load_cases(rid)), run_id=rid)

    def _load_cases(self, run_id: int) -> Iterator[CaseResult]:
        samples: dict[str, list[float]] = {}
        for r in self.db.query("select case_id, time_ms from samples where run_id = ? order by case_id, idx", [run_id]):
            samples.setdefault(r["case_id"], []).append(r["time_ms"])
        metrics: dict[str, list[Metric]] = {}
        for r in self.db.query("select * from metrics where run_id = ? order by case_id, source, kernel, name", [run_id]):
            metrics.setdefault(r["case_id"], []).append(
                Metric(name=r["name"], value=r["value"], unit=r["unit"], source=r["source"], kernel=r["kernel"]))
        for r in self.db.query("select * from cases where run_id = ? order by case_id", [run_id]):
            stats = {f.name: r[f.name] for f in fields(TimingStats)}
            stats["timer"] = Timer(stats["timer"])
            yield CaseResult(case_id=r["case_id"], timing=TimingStats(**stats),
                             samples_ms=tuple(samples.get(r["case_id"], ())),
                             metrics=tuple(metrics.get(r["case_id"], ())), bytes_moved=r["bytes_moved"],
                             flops=r["flops"], profile_errors=tuple(json.loads(r["profile_errors"] or "[]")))

    def history(self, case_id: str, device_name: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """Median time of one case over the last `limit` runs, oldest first (for trend charts)."""
        sql = ("select runs.id as run_id, runs.started_at, runs.git_commit, cases.median_ms, cases.q1_ms, cases.q3_ms "
               "from cases join runs on runs.id = cases.run_id where cases.case_id = ?")
        params: list[Any] = [case_id]
        if device_name:
            sql += " and runs.device_name = ?"
            params.append(device_name)
        sql += " order by runs.id desc limit ?"
        params.append(limit)
        return list(reversed(list(self.db.query(sql, params))))


def open_store(path: Path) -> Store:
    """Open (creating if needed) and migrate the history database."""
    import sqlite_utils

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite_utils.Database(path)
        version = _schema_version(db)
    except (OSError, sqlite3.DatabaseError) as err:
        raise StoreError(f"perfgate: cannot open history {path}: {err}") from err
    if version > SCHEMA_VERSION:
        raise StoreError(f"perfgate: history {path} has schema version {version}, newer than this perfgate "
                         f"understands ({SCHEMA_VERSION}); upgrade perfgate")
    with _migrating(db, path):
        for number in range(version, SCHEMA_VERSION):
            MIGRATIONS[number](db)
            db["perfgate_meta"].upsert({"key": "schema_version", "value": str(number + 1)}, pk="key")
    return Store(db, path)


def _schema_version(db: Any) -> int:
    if "perfgate_meta" not in db.table_names():
        if db.table_names():
            raise sqlite3.DatabaseError("not a perfgate history (it has other tables and no perfgate_meta)")
        return 0
    rows = list(db.query("select value from perfgate_meta where key = 'schema_version'"))
    return int(rows[0]["value"]) if rows else 0


@contextmanager
def _migrating(db: Any, path: Path) -> Iterator[None]:
    try:
        with db.atomic():
            yield
    except sqlite3.DatabaseError as err:
        raise StoreError(f"perfgate: cannot migrate history {path}: {err}") from err
