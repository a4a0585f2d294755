"""`perfgate db prune`: a bounded history. Old runs go, the runs anything still refers to stay, and the
file is compacted (VACUUM) so the space comes back.

A run is removed only when it is outside the newest `keep_runs` runs and (when given) started more
than `older_than_days` before `now`; never when it is pinned (pinned_runs: a change point, an incident)
or when a committed baseline refers to it (its updates name the commit and the time of the runs they
were written from: calibration processes, `--perfgate-update-baseline` runs). A run whose start time
cannot be read is never old enough to remove.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.baseline import Baseline
from perfgate.errors import StoreError
from perfgate.store import PAGE_SIZE, Store

# child tables first: each references runs(id)
RUN_TABLES = (
    "verdicts",
    "cases",
    "metrics",
    "gpu_state",
    "autotune",
    "speedups",
    "unmeasured_tests",
    "kernels",
    "compiled_cases",
    "runs",
)


@dataclass(frozen=True)
class BaselineRefs:
    """What committed baselines point at: the commits and finish times of the runs they came from."""

    commits: frozenset[str]
    finished_at: frozenset[str]

    @classmethod
    def of(cls, baselines: Iterable[Baseline]) -> BaselineRefs:
        updates = [u for b in baselines for u in b.updates]
        return cls(frozenset(u.commit for u in updates if u.commit), frozenset(u.at for u in updates if u.at))


@dataclass(frozen=True)
class PrunePlan:
    remove: tuple[int, ...]
    kept_pinned: int  # old enough to go, kept because pinned
    kept_by_baseline: int  # old enough to go, kept because a baseline refers to them
    runs_before: int


def plan_prune(
    store: Store, now: dt.datetime, keep_runs: int | None, older_than_days: float | None, refs: BaselineRefs
) -> PrunePlan:
    if keep_runs is None and older_than_days is None:
        raise StoreError("perfgate db prune: say what to keep: --keep-runs N and/or --older-than DAYS")
    if (keep_runs is not None and keep_runs < 0) or (older_than_days is not None and older_than_days < 0):
        raise StoreError("perfgate db prune: --keep-runs and --older-than must be >= 0")
    runs = store.query("SELECT id, started_at, finished_at, git_commit FROM runs ORDER BY id DESC")
    pinned = {p.run_id for p in store.pinned_runs()}
    cutoff = now - dt.timedelta(days=older_than_days) if older_than_days is not None else None
    remove: list[int] = []
    kept_pinned = kept_by_baseline = 0
    for rank, r in enumerate(runs):
        if keep_runs is not None and rank < keep_runs:
            continue
        if cutoff is not None and not _started_before(r["started_at"], cutoff):
            continue
        if r["id"] in pinned:
            kept_pinned += 1
        elif r["git_commit"] in refs.commits or r["finished_at"] in refs.finished_at:
            kept_by_baseline += 1
        else:
            remove.append(int(r["id"]))
    return PrunePlan(tuple(sorted(remove)), kept_pinned, kept_by_baseline, len(runs))


def _started_before(started_at: object, cutoff: dt.datetime) -> bool:
    if not isinstance(started_at, str):
        return False
    try:
        when = dt.datetime.fromisoformat(started_at)
    except ValueError:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when < cutoff


def remove_runs(store: Store, run_ids: Sequence[int]) -> None:
    """Delete the runs and every row of theirs, in one transaction (all or nothing)."""
    if store.readonly:
        raise StoreError(f"perfgate: history {store.path} is open read-only")
    with store.errors("prune it"):
        store.con.execute("BEGIN IMMEDIATE")
        try:
            store.con.execute("CREATE TEMP TABLE IF NOT EXISTS prune_ids (id INTEGER PRIMARY KEY)")
            store.con.execute("DELETE FROM temp.prune_ids")
            store.con.executemany("INSERT INTO temp.prune_ids (id) VALUES (?)", ((i,) for i in run_ids))
            pinned = store.con.execute(
                "SELECT run_id FROM pinned_runs WHERE run_id IN (SELECT id FROM temp.prune_ids) LIMIT 1"
            ).fetchone()
            if pinned:
                raise StoreError(f"perfgate: history {store.path}: run {pinned[0]} is pinned; not removed")
            for table in RUN_TABLES:
                key = "id" if table == "runs" else "run_id"
                store.con.execute(f"DELETE FROM {table} WHERE {key} IN (SELECT id FROM temp.prune_ids)")
            store.con.execute("COMMIT")
        except BaseException:
            if store.con.in_transaction:  # not after SQLite rolled back itself (a full disk): keep its error
                store.con.execute("ROLLBACK")
            raise


def compact(store: Store) -> None:
    """Give the space of removed rows back to the file system (VACUUM rewrites the file), moving a history
    made with small pages to PAGE_SIZE on the way (SQLite changes the page size only outside WAL mode, so
    this needs the file to itself for that moment)."""
    with store.errors("compact it (it needs the history to itself: is a gate writing to it?)"):
        if store.con.execute("PRAGMA page_size").fetchone()[0] != PAGE_SIZE:
            store.con.execute("PRAGMA journal_mode=DELETE")
            store.con.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            store.con.execute("VACUUM")
            store.con.execute("PRAGMA journal_mode=WAL")
        else:
            store.con.execute("VACUUM")
        # main only: an unqualified checkpoint also visits the connection's temp database (remove_runs made
        # one), and after the journal-mode switch above SQLite answers that with "database table is locked"
        store.con.execute("PRAGMA main.wal_checkpoint(TRUNCATE)")


def file_bytes(path: Path) -> int:
    """The history's size on disk, write-ahead log included."""
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
