import hashlib
import multiprocessing
import shutil
import sqlite3
import struct
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.errors import StoreError
from perfgate.model import CaseThresholds, GpuState, Metric, Speedup, TestOutcome, UnmeasuredTest
from perfgate.store import open_store, prepared, rows
from perfgate.store.merge import merge_histories
from perfgate.store.schema import SCHEMA_VERSION
from tests.helpers import make_run

V1_HISTORY = Path(__file__).parent / "data" / "history_v1.db"  # written by perfgate 0.1.0 (schema 1)


def rich_run():
    run = make_run(
        {"t.py::a": [1.0, 2.0, 3.0], "t.py::b": [4.0, 5.0]},
        metrics=(Metric("launch__registers_per_thread", 64.0, "register/thread", "ncu", "k"),),
        thresholds=CaseThresholds(
            time_pct=7.0, time_pct_explicit=True, metrics=(("dram__bytes_read.sum", 3.0),), min_speedup=1.2
        ),
    )
    a, b = run.results
    a = replace(
        a,
        gpu_state=GpuState(
            polls=12,
            sm_clock_mhz=1980.0,
            throttle_reasons=4,
            throttled_fraction=0.25,
            cooldown_ms=310.0,
            excluded_samples=3,
        ),
        autotune=(("_matmul_kernel", "BLOCK_M: 128"),),
        speedup=Speedup("torch.add", (2.0, 2.1, 2.2), 1.05, 1.0, 1.1),
        confirmation_medians_ms=(2.1, 2.05),
        location=("t.py", 12),
        device_uuid="GPU-1",
        profile_notes=("n",),
    )
    info = replace(run.info, unmeasured=(UnmeasuredTest("t.py::c", TestOutcome.SKIPPED, "no GPU"),))
    return replace(run, info=info, results=(a, b))


def test_a_stored_run_loads_back_equal_with_everything_the_gate_needs(history_target):
    run = rich_run()
    with open_store(history_target) as store:
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

        def interrupted_metrics(run_id, results):
            yield (run_id, results[0].case_id, "ncu", "k", "m", 1.0, "")
            raise KeyboardInterrupt  # Ctrl-C in the middle of storing

        monkeypatch.setattr(prepared, "metric_rows", interrupted_metrics)  # records -> rows: store/prepared.py
        with pytest.raises(KeyboardInterrupt):
            store.save_run(make_run({"b": [1.0, 2.0], "c": [3.0, 4.0]}))
    con = sqlite3.connect(tmp_path / "h.db")
    assert con.execute("select count(*) from runs").fetchone()[0] == 1
    assert con.execute("select count(*) from cases").fetchone()[0] == 1
    assert con.execute("select count(*) from metrics").fetchone()[0] == 0
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


def test_history_returns_medians_oldest_first(history_target):
    with open_store(history_target) as store:
        for m in (1.0, 2.0, 3.0):
            store.save_run(make_run({"a": [m, m]}))
        assert [p.median_ms for p in store.history("a")] == [1.0, 2.0, 3.0]
        assert [p.median_ms for p in store.history("a", up_to_run=2)] == [1.0, 2.0]  # re-gating run 2


def _store_runs(args):
    target, n = args
    from perfgate.store import open_store
    from tests.helpers import make_run

    with open_store(target) as store:
        for i in range(n):
            store.save_run(make_run({f"case{j}": [1.0 + i, 2.0, 3.0] for j in range(20)}))


def test_four_processes_storing_to_one_history_lose_no_run(history_target):
    with multiprocessing.get_context("spawn").Pool(4) as pool:  # each spawned process imports perfgate: ~0.5 s
        pool.map(_store_runs, [(history_target, 10)] * 4)
    with open_store(history_target, readonly=True) as store:
        assert store.query("select count(*) AS n from runs")[0]["n"] == 40
        assert store.query("select count(*) AS n from cases")[0]["n"] == 40 * 20
        assert store.query("select count(DISTINCT run_uid) AS n from runs")[0]["n"] == 40
    if isinstance(history_target, Path):
        con = sqlite3.connect(history_target)
        assert con.execute("pragma integrity_check").fetchone()[0] == "ok"


def test_merging_histories_is_idempotent(tmp_path, history_target):
    a, b, out = tmp_path / "a.db", tmp_path / "b.db", history_target
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


V2_HISTORY = Path(__file__).parent / "data" / "history_v2.db"  # written by the store of commit f9869e9 (schema 2)


def _digest_rows(rows_):
    h = hashlib.sha256()
    for key, values in sorted(rows_):
        h.update(repr(key).encode())
        h.update(struct.pack(f"<{len(values)}d", *values))
    return h.hexdigest(), sum(len(v) for _, v in rows_)


def _row_samples(path, table, key_table):
    """Every sample of a schema 1/2 history, read with plain SQL: ((run uid, case id), values in idx order)."""
    con = sqlite3.connect(path)
    uid = "r.run_uid" if key_table == "v2" else "r.id"
    got = {}
    for run, case_id, value in con.execute(
        f"select {uid}, s.case_id, s.time_ms from {table} s join runs r "
        f"on r.id = s.run_id order by s.run_id, s.case_id, s.idx"
    ):
        got.setdefault((run, case_id), []).append(value)
    con.close()
    return list(got.items())


def _stored_samples(store, key):
    out = []
    for rid in store.run_ids():
        run = store.load_run(rid)
        for r in run.results:
            out.append(((run.info.run_uid if key == "v2" else rid, r.case_id), list(r.samples_ms)))
    return out


def _stored_reference_samples(store):
    return [
        ((store.load_run(rid).info.run_uid, r.case_id), list(r.speedup.reference_samples_ms))
        for rid in store.run_ids()
        for r in store.load_run(rid).results
        if r.speedup is not None
    ]


@pytest.mark.parametrize("source, key", [(V1_HISTORY, "v1"), (V2_HISTORY, "v2")], ids=["schema1", "schema2"])
def test_migrating_an_old_history_keeps_every_sample_bit_for_bit(tmp_path, source, key):
    path = tmp_path / "h.db"
    shutil.copy(source, path)
    before = _digest_rows(_row_samples(source, "samples", key))
    with open_store(path) as store:
        assert _digest_rows(_stored_samples(store, key)) == before
    if key == "v2":
        refs = _digest_rows(_row_samples(source, "reference_samples", key))
        with open_store(path, readonly=True) as store:
            assert _digest_rows(_stored_reference_samples(store)) == refs
            assert refs[1] == 600
    assert before[1] > 0


def test_a_schema_2_history_opens_read_only_and_gives_the_same_runs(tmp_path):
    path = tmp_path / "h.db"
    shutil.copy(V2_HISTORY, path)
    with open_store(path, readonly=True) as old:
        runs = [old.load_run(rid) for rid in old.run_ids()]
    with open_store(path) as migrated:
        assert [migrated.load_run(rid) for rid in migrated.run_ids()] == runs
    softmax = {r.case_id: r for r in runs[0].results}["kernels/tests/test_softmax.py::test_softmax[1024]"]
    assert softmax.speedup is not None and softmax.autotune and softmax.gpu_state is not None
    assert {r.case_id for r in runs[0].results} >= {"tests/test_x.py::test_x[enum[BaseConverter]]"}
    assert runs[0].info.kind is None and runs[0].info.unmeasured  # stored before kinds were recorded
    con = sqlite3.connect(V2_HISTORY)  # what the file says, read with plain SQL
    plain = {
        (uid, cid): (med, q1, q3, n)
        for uid, cid, med, q1, q3, n in con.execute(
            "select r.run_uid, c.case_id, c.median_ms, c.q1_ms, c.q3_ms, "
            "(select count(*) from metrics m where m.run_id = c.run_id and m.case_id = c.case_id) "
            "from cases c join runs r on r.id = c.run_id"
        )
    }
    con.close()
    assert plain == {
        (run.info.run_uid, r.case_id): (r.timing.median_ms, r.timing.q1_ms, r.timing.q3_ms, len(r.metrics))
        for run in runs
        for r in run.results
    }


def test_samples_table_and_redundant_indexes_are_gone_after_migration(tmp_path):
    path = tmp_path / "h.db"
    shutil.copy(V2_HISTORY, path)
    open_store(path).close()
    names = {r[0] for r in sqlite3.connect(path).execute("select name from sqlite_master")}
    assert not names & {"samples", "reference_samples", "idx_cases_case_id", "idx_metrics_case_id_name"}
    assert {"verdicts", "pinned_runs", "idx_cases_case_id_run_id"} <= names


def test_a_sample_without_its_case_refuses_the_migration_and_changes_nothing(tmp_path):
    path = tmp_path / "h.db"
    shutil.copy(V2_HISTORY, path)
    con = sqlite3.connect(path)
    con.execute("insert into samples values (1, 'lost::case', 0, 1.5)")
    con.commit()
    con.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(StoreError, match=r"not migrated \(nothing changed\): run 1 has samples of case 'lost::case'"):
        open_store(path)
    assert sqlite3.connect(path).execute("select value from perfgate_meta").fetchone()[0] == "2"
    con = sqlite3.connect(path)
    assert con.execute("select count(*) from samples").fetchone()[0] == 1141
    con.close()
    del before


def test_samples_with_a_gap_refuse_the_migration(tmp_path):
    path = tmp_path / "h.db"
    shutil.copy(V2_HISTORY, path)
    con = sqlite3.connect(path)
    con.execute("delete from samples where run_id = 2 and idx = 7 and case_id like '%softmax%'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=r"run 2 case '.*softmax.*': samples are not numbered 0..198"):
        open_store(path)
