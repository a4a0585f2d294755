"""Histories are verified before they are trusted (issue 23): a damaged history is refused with one line
naming the file and the problem by `compare`, `history` and `db merge`, never gated, never a traceback or
a hang, and the refusal changes nothing in the file."""

import hashlib
import re
import subprocess
import sys
from dataclasses import replace

import pytest

from perfgate.baseline.write import write_baseline
from perfgate.cli import main
from perfgate.store import open_store
from tests.helpers import calibrated_of, make_run, noisy

ENDLESS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"

DAMAGE = {
    "extra column": ("ALTER TABLE cases ADD COLUMN evil REAL", r"table 'cases' has column\(s\) perfgate never made"),
    "missing column": ("ALTER TABLE cases DROP COLUMN profile_notes", r"table 'cases' lacks column\(s\)"),
    "foreign view": ("CREATE VIEW evil AS SELECT 1", "view 'evil' is not perfgate's"),
    "changed view": (
        "DROP VIEW latest_case_results; CREATE VIEW latest_case_results AS " + ENDLESS,
        "view 'latest_case_results' differs from perfgate's",
    ),
    "trigger": (
        "CREATE TRIGGER evil AFTER INSERT ON runs BEGIN DELETE FROM cases; END",
        "trigger 'evil' is not perfgate's",
    ),
    "endless view for a table": (
        "DROP VIEW latest_case_results; DROP VIEW case_history; "
        "ALTER TABLE verdicts RENAME TO old_verdicts; CREATE VIEW verdicts AS " + ENDLESS,
        "'verdicts' is a view, not the table perfgate made",
    ),
    "duplicated run uid": (
        "DROP INDEX idx_runs_run_uid; UPDATE runs SET run_uid = 'same'",
        "run uid 'same' is stored more than once",
    ),
    "wrong JSON type": ("UPDATE cases SET thresholds = '[1, 2]'", "thresholds: JSON list where a dict belongs"),
    "stored threshold 1e12": (
        "UPDATE cases SET thresholds = json_set(thresholds, '$.time_pct', 1e12)",
        r"thresholds.time_pct: 1000000000000.0 is above 1000",
    ),
    "median of -1": ("UPDATE cases SET median_ms = -1, min_ms = -1, q1_ms = -1", "median_ms: -1.0 is below 0"),
    "non-finite median": ("UPDATE cases SET median_ms = 9e999", "median_ms: inf is not a finite number"),
    "samples not packed": ("UPDATE cases SET samples_f64 = 'abc'", "a packed sample array must be a BLOB"),
}


@pytest.fixture
def damaged_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = make_run({"t::a": noisy(1.0)})
    path = tmp_path / "baselines" / "nvidia-h100-80gb-hbm3.json"
    write_baseline(replace(calibrated_of(base, tmp_path), path=path))
    with open_store(tmp_path / "h.db") as store:
        store.save_run(make_run({"t::a": noisy(1.0, seed=1)}, uid="one"))
        store.save_run(make_run({"t::a": noisy(60.0, seed=2)}, uid="two"))  # +5,900 %: must never pass

    def damage(sql):
        import sqlite3

        con = sqlite3.connect(tmp_path / "h.db")
        con.executescript(sql)
        con.close()
        return tmp_path / "h.db"

    return damage


def _cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


COMMANDS = {
    "compare": lambda db, out: ("compare", "--db", str(db)),
    "history": lambda db, out: ("history", "--db", str(db), "--case", "t::*"),
    "db merge": lambda db, out: ("db", "merge", str(out), str(db)),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("damage", sorted(DAMAGE), ids=lambda d: d.replace(" ", "-"))
def test_a_damaged_history_is_refused_with_one_line(damaged_project, tmp_path, capsys, damage, command):
    sql, problem = DAMAGE[damage]
    db = damaged_project(sql)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    code, out, err = _cli(capsys, *COMMANDS[command](db, tmp_path / "merged.db"))
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith(f"perfgate: history {db}"), err
    assert re.search(problem, err), err
    assert "REGRESSED" not in out and "passed" not in out
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # refused, not repaired or half-migrated
    if (
        command == "db merge"
        and "JSON" not in damage
        and "stored" not in damage
        and "median" not in damage
        and "samples" not in damage
    ):
        assert not (tmp_path / "merged.db").exists()  # a schema problem is found before OUT is created


def test_an_endless_view_in_place_of_a_table_never_hangs_a_command(damaged_project, tmp_path):
    """In a child process with a time limit: a hang would otherwise stall the suite."""
    db = damaged_project(DAMAGE["endless view for a table"][0])
    for args in (
        ("compare", "--db", str(db)),
        ("history", "--db", str(db)),
        ("db", "merge", str(tmp_path / "m.db"), str(db)),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, timeout=120, cwd=tmp_path
        )
        assert done.returncode == 2 and "is a view, not the table perfgate made" in done.stderr, done.stderr


def test_an_undamaged_history_still_gates(damaged_project, capsys):
    db = damaged_project("SELECT 1")
    code, out, _ = _cli(capsys, "compare", "--db", str(db))
    assert code == 1 and "REGRESSED" in out


def _stored_value_strategy():
    from hypothesis import strategies as st

    return st.one_of(
        st.none(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-(2**63), 2**63 - 1),
        st.text(max_size=8),
        st.binary(max_size=16),
    )


def test_any_stored_value_reads_back_true_or_is_one_clear_line(tmp_path_factory):
    """Property: whatever a hand or a fuzzer writes into a case row's columns, reading the run gives a
    record whose numbers are finite and ordered, or a StoreError naming the file."""
    import math
    import shutil
    import sqlite3

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from perfgate.errors import StoreError

    clean = tmp_path_factory.mktemp("clean") / "h.db"
    with open_store(clean) as store:
        store.save_run(make_run({"t::a": noisy(1.0, n=10)}))
    columns = (
        "median_ms",
        "min_ms",
        "q3_ms",
        "n_samples",
        "thresholds",
        "samples_f64",
        "confirmation_medians",
        "timer",
        "profile_errors",
        "gbps",
        "verdict",
    )

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(column=st.sampled_from(columns), value=_stored_value_strategy())
    def check(column, value):
        path = tmp_path_factory.mktemp("h") / "h.db"
        shutil.copy(clean, path)
        con = sqlite3.connect(path)
        con.execute(f"UPDATE cases SET {column} = ?", (value,))
        con.commit()
        con.close()
        try:
            with open_store(path, readonly=True) as store:
                (case,) = store.load_run(1).results
        except StoreError as err:
            assert str(err).startswith(f"perfgate: history {path}") and "\n" not in str(err)
            return
        t = case.timing
        values = (t.median_ms, t.min_ms, t.max_ms, t.q1_ms, t.q3_ms, t.mean_ms, *case.samples_ms)
        assert all(math.isfinite(v) and v >= 0 for v in values)
        assert t.min_ms <= t.median_ms * (1 + 1e-9) and t.median_ms <= t.max_ms * (1 + 1e-9)

    check()
