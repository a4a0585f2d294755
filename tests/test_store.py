import sqlite3

import pytest

from perfgate.errors import StoreError
from perfgate.model import Metric
from perfgate.store import SCHEMA_VERSION, open_store
from tests.test_baseline import make_run


def test_saved_run_loads_back_equal(tmp_path):
    store = open_store(tmp_path / "h.db")
    run = make_run({"a": [1.0, 2.0, 3.0]}, metrics=(Metric("launch__registers_per_thread", 64.0, "register/thread", "ncu", "k"),))
    rid = store.save_run(run)
    back = store.load_run(rid)
    assert back.environment == run.environment
    assert back.results[0].samples_ms == (1.0, 2.0, 3.0)
    assert back.results[0].metrics == run.results[0].metrics
    assert back.results[0].timing == run.results[0].timing
    assert store.load_run().run_id == rid


def test_failure_mid_write_leaves_no_half_written_run(tmp_path, monkeypatch):
    store = open_store(tmp_path / "h.db")
    store.save_run(make_run({"a": [1.0, 2.0]}))
    original = store._insert_case
    calls = []

    def crash_on_second_case(run_id, res):
        calls.append(res.case_id)
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C in the middle of storing
        original(run_id, res)

    monkeypatch.setattr(store, "_insert_case", crash_on_second_case)
    with pytest.raises(KeyboardInterrupt):
        store.save_run(make_run({"b": [1.0, 2.0], "c": [3.0, 4.0]}))
    con = sqlite3.connect(tmp_path / "h.db")
    assert con.execute("select count(*) from runs").fetchone()[0] == 1
    assert con.execute("select count(*) from cases").fetchone()[0] == 1
    assert con.execute("select count(*) from samples where case_id = 'b'").fetchone()[0] == 0


def test_schema_version_is_recorded_and_newer_databases_are_refused(tmp_path):
    path = tmp_path / "h.db"
    open_store(path).close()
    con = sqlite3.connect(path)
    assert con.execute("select value from perfgate_meta where key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    con.execute("update perfgate_meta set value = '999' where key = 'schema_version'")
    con.commit()
    with pytest.raises(StoreError, match="schema version 999"):
        open_store(path)


def test_foreign_database_is_not_touched(tmp_path):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("create table users (id int)")
    con.commit()
    with pytest.raises(StoreError, match="not a perfgate history"):
        open_store(path)


def test_corrupt_database_is_a_clear_error(tmp_path):
    path = tmp_path / "h.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="cannot open history"):
        open_store(path)


def test_history_returns_medians_oldest_first(tmp_path):
    store = open_store(tmp_path / "h.db")
    for m in (1.0, 2.0, 3.0):
        store.save_run(make_run({"a": [m, m]}))
    assert [r["median_ms"] for r in store.history("a")] == [1.0, 2.0, 3.0]
