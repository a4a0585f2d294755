import hashlib
import multiprocessing
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.errors import StoreError
from perfgate.model import CaseThresholds, GpuState, Metric, Speedup, TestOutcome, UnmeasuredTest
from perfgate.store import open_store, rows
from perfgate.store.merge import merge_histories
from perfgate.store.schema import SCHEMA_VERSION
from tests.helpers import make_run

V1_HISTORY = Path(__file__).parent / "data" / "history_v1.db"  # written by perfgate 0.1.0 (schema 1)


def rich_run():
    run = make_run({"t.py::a": [1.0, 2.0, 3.0], "t.py::b": [4.0, 5.0]},
                   metrics=(Metric("launch__registers_per_thread", 64.0, "register/thread", "ncu", "k"),),
                   thresholds=CaseThresholds(time_pct=7.0, time_pct_explicit=True, metrics=(("dram__bytes_read.sum",
                                                                                             3.0),),
                                             min_speedup=1.2))
    a, b = run.results
    a = replace(a, gpu_state=GpuState(polls=12, sm_clock_mhz=1980.0, throttle_reasons=4, throttled_fraction=0.25,
                                      cooldown_ms=310.0, excluded_samples=3),
                autotune=(("_matmul_kernel", "BLOCK_M: 128"),), speedup=Speedup("torch.add", (2.0, 2.1, 2.2), 1.05,
                                                                                1.0, 1.1),
                confirmation_medians_ms=(2.1, 2.05), location=("t.py", 12), device_uuid="GPU-1", profile_notes=("n",))
    info = replace(run.info, unmeasured=(UnmeasuredTest("t.py::c", TestOutcome.SKIPPED, "no GPU"),))
    return replace(run, info=info, results=(a, b))


def test_a_stored_run_loads_back_equal_with_everything_the_gate_needs(tmp_path):
    run = rich_run()
    with open_store(tmp_path / "h.db") as store:
        rid = store.save_run(run)
        back = store.load_run(rid)
    assert back.environment == run.environment
    assert back.results == run.results  # thresholds, GPU state, autotune, speedup, confirmations, location
    assert back.info.unmeasured == run.info.unmeasured
    assert len(back.info.run_uid) == 32


def test_every_environment_and_run_field_has_a_column():
    """A new record field must come with a migration, not vanish silently."""
    from perfgate.model import Environment, RunInfo

    assert set(Environment.__dataclass_fields__) == set(rows.ENV_COLUMNS)
    stored = set(rows.RUN_COLUMNS) | {"hostname", "unmeasured"}
    assert set(RunInfo.__dataclass_fields__) <= stored


def test_an_interrupt_mid_write_leaves_no_half_run(tmp_path, monkeypatch):
    with open_store(tmp_path / "h.db") as store:
        store.save_run(make_run({"a": [1.0, 2.0]}))

        def interrupted_samples(run_id, results):
            yield (run_id, results[0].case_id, 0, 1.0)
            raise KeyboardInterrupt  # Ctrl-C in the middle of storing

        monkeypatch.setattr(rows, "sample_rows", interrupted_samples)
        with pytest.raises(KeyboardInterrupt):
            store.save_run(make_run({"b": [1.0, 2.0], "c": [3.0, 4.0]}))
    con = sqlite3.connect(tmp_path / "h.db")
    assert con.execute("select count(*) from runs").fetchone()[0] == 1
    assert con.execute("select count(*) from cases").fetchone()[0] == 1
    assert con.execute("select count(*) from samples where case_id = 'b'").fetchone()[0] == 0
    assert con.execute("pragma integrity_check").fetchone()[0] == "ok"


def test_schema_version_is_recorded_and_newer_databases_are_refused(tmp_path):
    path = tmp_path / "h.db"
    open_store(path).close()
    con = sqlite3.connect(path)
    version = con.execute("select value from perfgate_meta where key='schema_version'").fetchone()[0]
    assert version == str(SCHEMA_VERSION)
    con.execute("update perfgate_meta set value = '999' where key = 'schema_version'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="schema version 999"):
        open_store(path)


def test_a_history_written_by_the_first_version_migrates_and_keeps_its_runs(tmp_path):
    path = tmp_path / "h.db"
    shutil.copy(V1_HISTORY, path)
    with open_store(path) as store:
        old = store.load_run(1)
        assert [r.case_id for r in old.results] == ["t.py::a", "t.py::b"]
        assert old.results[0].metrics[0].name == "launch__registers_per_thread"
        assert old.info.run_uid.startswith("v1-")
        new_id = store.save_run(rich_run())
        assert store.load_run(new_id).results == rich_run().results


def test_reading_an_old_history_read_only_leaves_the_file_untouched(tmp_path):
    path = tmp_path / "h.db"
    shutil.copy(V1_HISTORY, path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with open_store(path, readonly=True) as store:
        assert store.run_ids() == [1, 2]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.db"]


def test_read_only_open_of_a_missing_history_creates_nothing(tmp_path):
    with pytest.raises(StoreError, match="no history at"):
        open_store(tmp_path / "nope" / "x.db", readonly=True)
    assert not (tmp_path / "nope").exists()


def test_a_history_with_a_renamed_column_is_refused_by_name(tmp_path):
    path = tmp_path / "h.db"
    open_store(path).close()
    con = sqlite3.connect(path)
    con.execute("alter table cases rename column median_ms to med")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=r"table 'cases' lacks column\(s\) \['median_ms'\]"):
        open_store(path)


def test_foreign_database_is_not_touched(tmp_path):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("create table users (id int)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="not a perfgate history"):
        open_store(path)


@pytest.mark.parametrize("content", [b"this is not sqlite at all" * 100, b"SQLite format 3\x00" + b"\x00" * 50])
def test_corrupt_database_is_a_clear_error(tmp_path, content):
    path = tmp_path / "h.db"
    path.write_bytes(content)
    with pytest.raises(StoreError, match=str(path)):
        open_store(path)


def test_history_returns_medians_oldest_first(tmp_path):
    with open_store(tmp_path / "h.db") as store:
        for m in (1.0, 2.0, 3.0):
            store.save_run(make_run({"a": [m, m]}))
        assert [p.median_ms for p in store.history("a")] == [1.0, 2.0, 3.0]
        assert [p.median_ms for p in store.history("a", up_to_run=2)] == [1.0, 2.0]  # re-gating run 2


def _store_runs(args):
    path, n = args
    from perfgate.store import open_store
    from tests.helpers import make_run

    with open_store(Path(path)) as store:
        for i in range(n):
            store.save_run(make_run({f"case{j}": [1.0 + i, 2.0, 3.0] for j in range(20)}))


def test_eight_processes_storing_to_one_history_lose_no_run(tmp_path):
    path = tmp_path / "h.db"
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        pool.map(_store_runs, [(str(path), 5)] * 8)
    con = sqlite3.connect(path)
    assert con.execute("select count(*) from runs").fetchone()[0] == 40
    assert con.execute("select count(*) from cases").fetchone()[0] == 40 * 20
    assert con.execute("pragma integrity_check").fetchone()[0] == "ok"


def test_merging_histories_is_idempotent(tmp_path):
    a, b, out = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "out.db"
    with open_store(a) as store:
        store.save_run(make_run({"x": [1.0, 2.0]}))
        store.save_run(make_run({"x": [1.5, 2.0]}))
    with open_store(b) as store:
        store.save_run(make_run({"y": [3.0, 4.0]}))
    first = merge_histories(out, [a, b])
    assert [(c.added, c.already_there) for c in first] == [(2, 0), (1, 0)]
    again = merge_histories(out, [a, b, a])
    assert [c.added for c in again] == [0, 0, 0]
    with open_store(out, readonly=True) as store:
        assert len(store.run_ids()) == 3
        assert {r.case_id for rid in store.run_ids() for r in store.load_run(rid).results} == {"x", "y"}


def test_merging_a_history_into_itself_is_refused(tmp_path):
    a = tmp_path / "a.db"
    open_store(a).close()
    with pytest.raises(StoreError, match="into itself"):
        merge_histories(a, [a])
