"""Writers of one SQLite history queue for its write lock: each waits its turn while the others keep
committing, however long the queue, and is refused in one line only when no write has finished for
BUSY_TIMEOUT_S (a stuck or dead holder). The clock here is a stand-in: nothing waits for real."""

from __future__ import annotations

import sqlite3

import pytest

from perfgate.errors import StoreError
from perfgate.store import open_store
from perfgate.store import sqlite as store_sqlite
from tests.helpers import make_run


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _history(tmp_path):
    path = tmp_path / "history.db"
    open_store(path).close()
    return path


def _holder(path):
    con = sqlite3.connect(path, isolation_level=None, timeout=0)
    con.execute("CREATE TABLE IF NOT EXISTS fleet_marks (n INTEGER)")
    con.execute("BEGIN IMMEDIATE")
    return con


def test_a_writer_waits_its_turn_for_as_long_as_the_others_keep_committing(tmp_path):
    path = _history(tmp_path)
    holder = _holder(path)
    waiter = sqlite3.connect(path, isolation_level=None)
    clock, turns = _Clock(), []

    def sleep(_: float) -> None:  # 30 s pass and another writer commits; after 20 of them (600 s) the queue empties
        clock.now += 30.0
        holder.execute("INSERT INTO fleet_marks VALUES (1)")
        holder.execute("COMMIT")
        turns.append(clock.now)
        if len(turns) < 20:
            holder.execute("BEGIN IMMEDIATE")

    store_sqlite.begin_immediate(waiter, slice_s=0.001, clock=clock, sleep=sleep)
    assert waiter.in_transaction and len(turns) == 20 and clock.now > 4 * store_sqlite.BUSY_TIMEOUT_S
    waiter.execute("ROLLBACK")
    assert waiter.execute("PRAGMA busy_timeout").fetchone()[0] == store_sqlite.BUSY_TIMEOUT_S * 1000


def test_a_writer_behind_a_lock_that_never_moves_is_refused(tmp_path):
    path = _history(tmp_path)
    holder = _holder(path)
    waiter = sqlite3.connect(path, isolation_level=None)
    clock = _Clock()

    def sleep(_: float) -> None:
        clock.now += 10.0

    with pytest.raises(sqlite3.OperationalError) as err:
        store_sqlite.begin_immediate(waiter, slice_s=0.001, clock=clock, sleep=sleep)
    assert err.value.sqlite_errorname.startswith("SQLITE_BUSY")
    assert store_sqlite.BUSY_TIMEOUT_S <= clock.now <= store_sqlite.BUSY_TIMEOUT_S + 10.0
    assert not waiter.in_transaction
    holder.execute("ROLLBACK")


def test_a_refused_store_says_so_in_one_line_and_stores_nothing(tmp_path, monkeypatch):
    path = _history(tmp_path)
    with open_store(path) as store:
        holder = _holder(path)
        monkeypatch.setattr(store_sqlite, "BUSY_TIMEOUT_S", 0.0)
        monkeypatch.setattr(store_sqlite, "BEGIN_SLICE_S", 0.001)
        with pytest.raises(StoreError) as err:
            store.save_run(make_run({"k::a": [1.0, 1.1, 1.2]}))
    message = str(err.value)
    assert "\n" not in message and "locked by another process, with no write finished" in message
    holder.execute("ROLLBACK")
    with open_store(path, readonly=True) as store:
        assert store.query("SELECT count(*) AS n FROM runs")[0]["n"] == 0


def _writer_on_a_new_file(path):
    """Another process's write lock on a history file still in SQLite's default (rollback) journal mode:
    what a fleet's first writer holds while the others open the same new history."""
    con = sqlite3.connect(path, isolation_level=None, timeout=0)
    con.execute("BEGIN IMMEDIATE")
    return con


def test_opening_a_new_history_waits_for_a_writer_that_holds_it(tmp_path, monkeypatch):
    path = tmp_path / "history.db"
    holder = _writer_on_a_new_file(path)
    pauses = []

    def pause(_: float) -> None:  # the other writer finishes while this one pauses
        pauses.append(1)
        if holder.in_transaction:
            holder.execute("COMMIT")

    monkeypatch.setattr(store_sqlite.time, "sleep", pause)
    with open_store(path) as store:
        store.save_run(make_run({"a": [1.0, 1.0]}))
    assert pauses, "SQLite refused the journal-mode switch at once; the open must retry it"
    with open_store(path, readonly=True) as store:
        assert store.query("select count(*) AS n from runs")[0]["n"] == 1


def test_opening_a_new_history_behind_a_lock_that_never_moves_is_refused_in_one_line(tmp_path):
    path = tmp_path / "history.db"
    holder = _writer_on_a_new_file(path)
    con = sqlite3.connect(path, isolation_level=None, timeout=0)
    clock = _Clock()

    def sleep(_: float) -> None:
        clock.now += 7.0

    with pytest.raises(sqlite3.OperationalError) as err:
        store_sqlite.enable_wal(con, clock=clock, sleep=sleep)
    assert err.value.sqlite_errorname.startswith("SQLITE_BUSY")
    assert store_sqlite.BUSY_TIMEOUT_S <= clock.now <= store_sqlite.BUSY_TIMEOUT_S + 7.0
    holder.execute("ROLLBACK")
    store_sqlite.enable_wal(con, clock=clock, sleep=sleep)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
