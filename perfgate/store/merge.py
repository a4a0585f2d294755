"""`perfgate db merge OUT IN...` and `perfgate db export OUT --db DB --run-uid UID`: runs from one history
into another.

Idempotent and linear: runs are matched by their identity (run_uid, looked up through its unique index),
so merging the same inputs twice adds nothing, and each input costs what its own runs cost, whatever OUT
holds. A run stored without an identity (a history edited by hand) gets one derived from its content, so
it too is merged once, and is matched by content against OUT's runs of the same start, finish and commit
(OUT may hold the same run under its real identity; likewise a run OUT holds without one): a look through
OUT's runs table, paid only by such runs, or by every run while OUT holds any such run. Every copied
run is read through the store (every value re-validated) and the runs of one input land in one
transaction, with their verdicts, kind and pins.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.errors import StoreError
from perfgate.model import Run
from perfgate.store import Store, open_store
from perfgate.store.copy import copy_runs
from perfgate.store.target import HistoryTarget, ServerUrl
from perfgate.store.verdicts import RunVerdicts

BATCH_RUNS = 200  # runs held in memory and written per transaction
KEEP_OPEN = 64  # inputs kept open from their check to their copy (each is a file descriptor)
DERIVED = "derived-"  # the prefix of an identity derived from a run's content
# a run stored without an identity, or with one a merge derived (a range, so the unique index answers it)
UIDLESS = f"(run_uid IS NULL OR (run_uid >= '{DERIVED}' AND run_uid < 'derived.'))"


@dataclass(frozen=True)
class MergeCount:
    source: HistoryTarget
    added: int
    already_there: int


# what a run and its verdicts become on the way into OUT (`db export` scrubs what it uploads)
Transform = Callable[[Run, RunVerdicts | None], tuple[Run, RunVerdicts | None]]


def merge_histories(
    out: HistoryTarget,
    inputs: Sequence[HistoryTarget],
    run_uids: Sequence[str] | None = None,
    transform: Transform | None = None,
) -> list[MergeCount]:
    """Copy the runs of each input that OUT lacks (only those named in `run_uids` when given), each through
    `transform` when given. Any of them a SQLite file or a server (runners' files into the fleet's server)."""
    counts = []
    kept: dict[int, Store] = {}  # the first KEEP_OPEN inputs stay open between the check and the copy
    try:
        for i, source in enumerate(inputs):
            if _same_history(source, out):
                raise StoreError(f"perfgate: cannot merge {source} into itself")
            store = open_store(source, readonly=True)  # every input verified before OUT is created or written
            if i < KEEP_OPEN:
                kept[i] = store
            else:
                store.close()
        with open_store(out) as dst:
            for i, source in enumerate(inputs):
                with kept.pop(i, None) or open_store(source, readonly=True) as src:
                    counts.append(_merge_one(src, dst, run_uids, transform))
    finally:
        for store in kept.values():
            store.close()
    return counts


def _same_history(a: HistoryTarget, b: HistoryTarget) -> bool:
    if isinstance(a, Path) and isinstance(b, Path):
        return a.resolve() == b.resolve()
    return isinstance(a, ServerUrl) and isinstance(b, ServerUrl) and a.url == b.url


def _merge_one(src: Store, dst: Store, run_uids: Sequence[str] | None, transform: Transform | None) -> MergeCount:
    added = skipped = 0
    pins = {p.run_id: p for p in src.pinned_runs()}
    seen: set[str] = set()
    out_has_uidless = bool(dst.query(f"SELECT 1 FROM runs WHERE {UIDLESS} LIMIT 1"))
    for batch in _batches(_source_runs(src, run_uids)):
        held = _held(dst, [uid for _, uid, _ in batch])
        todo: list[tuple[int, str]] = []
        for run_id, uid, uid_stored in batch:
            if uid in seen or uid in held:
                skipped += 1
                continue
            seen.add(uid)
            # a run whose identity one side lacks is matched by its content: IN's copy of a run OUT holds,
            # with its run_uid cleared by hand, is not a new run
            if (not uid_stored or out_has_uidless) and _same_content_in(dst, src, run_id, uid, uid_stored):
                skipped += 1
                continue
            todo.append((run_id, uid))
        new_ids = _copy(src, dst, todo, transform)
        for (src_id, _), new_id in zip(todo, new_ids):
            if src_id in pins:
                dst.pin_run(new_id, pins[src_id].reason, pins[src_id].pinned_at)
        added += len(todo)
    return MergeCount(src.path, added, skipped)


def _held(dst: Store, uids: list[str]) -> set[str]:
    """The identities of `uids` OUT holds already (one query through the run_uid index)."""
    found = dst.query(
        f"SELECT run_uid FROM runs WHERE run_uid IN ({dst.dialect.json_values('uids')})", {"uids": json.dumps(uids)}
    )
    return {r["run_uid"] for r in found}


def _copy(src: Store, dst: Store, todo: list[tuple[int, str]], transform: Transform | None) -> list[int]:
    """The runs as stored (re-validated, store/copy.py), or each rebuilt and passed through `transform`
    (db export scrubs what it uploads)."""
    if transform is None:
        return copy_runs(src, dst, todo)
    runs = []
    for run_id, uid in todo:
        run, verdicts = transform(src.load_run(run_id), src.load_verdicts(run_id))
        runs.append((replace(run, info=replace(run.info, run_uid=uid)), verdicts))
    return dst.save_runs(runs)


def _same_content_in(dst: Store, src: Store, run_id: int, uid: str, uid_stored: bool) -> bool:
    """Whether OUT holds a run with the content of IN's run `run_id` (whose identity, stored or derived, is
    `uid`): the candidates share its start, finish and commit (only those without a stored uid when IN's
    has one)."""
    key = src.query("SELECT started_at, finished_at, git_commit FROM runs WHERE id = :id", {"id": run_id})[0]
    candidates = dst.query(
        "SELECT id FROM runs WHERE "
        + " AND ".join(_same(c, key[c]) for c in ("started_at", "finished_at", "git_commit"))
        + ("" if not uid_stored else f" AND {UIDLESS}"),
        {c: key[c] for c in ("started_at", "finished_at", "git_commit") if key[c] is not None},
    )
    if not candidates:
        return False
    mine = uid if not uid_stored else _derived_uid(src, run_id)
    return any(_derived_uid(dst, int(c["id"])) == mine for c in candidates)


def _same(column: str, value: object) -> str:
    """`column` equal to the parameter of its name, NULL to NULL (SQLite's `IS`, written for both backends)."""
    return f"{column} IS NULL" if value is None else f"{column} = :{column}"


def _source_runs(src: Store, run_uids: Sequence[str] | None) -> Iterator[tuple[int, str, bool]]:
    """(run id, identity, whether the identity is stored rather than derived) of the runs to copy, in storage
    order."""
    if run_uids is None:
        rows = src.query("SELECT id, run_uid FROM runs ORDER BY id")
    else:
        found = (
            {
                r["run_uid"]: r
                for r in src.query(
                    f"SELECT id, run_uid FROM runs WHERE run_uid IN ({src.dialect.json_values('uids')}) ORDER BY id",
                    {"uids": json.dumps(list(run_uids))},
                )
            }
            if run_uids
            else {}
        )
        missing = [u for u in run_uids if u not in found]
        if missing:
            raise StoreError(f"perfgate: history {src.path} has no run with uid {missing[0]!r}")
        rows = list(found.values())
    for row in rows:
        run_id = int(row["id"])
        yield run_id, row["run_uid"] or _derived_uid(src, run_id), bool(row["run_uid"])


def _derived_uid(src: Store, run_id: int) -> str:
    """An identity for a run stored without one: the same content always gives the same uid."""
    run = src.load_run(run_id)
    digest = hashlib.sha256(
        repr(
            (
                run.info.started_at,
                run.info.finished_at,
                run.info.git_commit,
                run.info.argv,
                run.environment,
                [(r.case_id, r.samples_ms) for r in run.results],
            )
        ).encode()
    )
    return DERIVED + digest.hexdigest()[:32]


def _batches(items: Iterator[tuple[int, str, bool]]) -> Iterator[list[tuple[int, str, bool]]]:
    batch: list[tuple[int, str, bool]] = []
    for item in items:
        batch.append(item)
        if len(batch) == BATCH_RUNS:
            yield batch
            batch = []
    if batch:
        yield batch
