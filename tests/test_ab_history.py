"""A/B runs in the history are A/B runs (issue 30, requirement 7): each side stored with its kind and their
pairing, samples bounded like a gate run's, kept out of a case's trend, its change points, its noise window
and the dashboard's series unless asked for; `perfgate history --kind ab` lists them and
`store/ab_pairs.py` reads one comparison back whole.

Written first and seen failing: both sides were stored as `kind = gate` with every round's samples
(thousands per case), the base side sat among gate runs in every series, and `perfgate.history()`'s
docstring example raised on the two sides' shared `started_at`.
"""

from __future__ import annotations

import sqlite3
import struct

import pytest

from perfgate.ab.run import run_ab
from perfgate.cli import main
from perfgate.config.settings import MeasureOptions
from perfgate.model import RunKind
from perfgate.store import open_store
from perfgate.store.ab_pairs import ab_comparison, ab_comparisons
from tests.ab_repo import cases, commit, make_repo, request
from tests.helpers import make_run, noisy

TIMES = {"a": 1.0, "b": 2.0}


@pytest.fixture
def stored(tmp_path):
    """A history holding one gate run and then one A/B comparison (base commit, then head)."""
    repo = make_repo(tmp_path / "repo")
    base = commit(repo, cases(TIMES), "base")
    commit(repo, cases({"a": 1.3, "b": 2.0}), "head: a slower")
    with open_store(tmp_path / "history.db") as store:
        store.save_run(make_run({"test_perf.py::a": noisy(1.0)}))
    outcome = run_ab(request(repo, "HEAD~1", tmp_path, measure=MeasureOptions(max_samples=30)))
    return tmp_path / "history.db", outcome, base


def test_both_sides_are_stored_as_ab_runs_paired_with_the_base_commit(stored):
    db, outcome, base = stored
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT id, kind, ab_pair, git_commit, gate_failed FROM runs ORDER BY id").fetchall()
    assert [r[1] for r in rows] == ["gate", "ab-base", "ab-head"]
    (_, _, base_pair, base_commit, base_gate), (_, _, head_pair, _, head_gate) = rows[1], rows[2]
    assert base_pair == head_pair and base_pair and base_commit == base
    assert base_gate is None and head_gate == 1  # the head carries the verdicts: a slowed
    with open_store(db, readonly=True) as store:
        [row] = ab_comparisons(store, 10)
        whole = ab_comparison(store, row.pair)
    assert (row.base_commit, row.gate, row.head_run_id, row.base_run_id) == (base, "failed", 3, 2)
    assert whole is not None and whole.base_commit == base and whole.verdicts is not None
    assert whole.head.info.kind is RunKind.AB_HEAD and whole.base.info.kind is RunKind.AB_BASE
    assert outcome.base_run.run_id == 2 and outcome.head_run.run_id == 3


def test_a_side_keeps_at_most_max_samples_per_case_and_its_statistics_from_all(stored):
    db, outcome, _ = stored
    with sqlite3.connect(db) as con:
        blobs = con.execute("SELECT n_samples, length(samples_f64) FROM cases WHERE run_id > 1").fetchall()
    # a side takes max_samples per stage (split over its rounds): a case with confirmation stages has more
    # samples behind its statistics than the history keeps
    assert blobs and all(size == 8 * 30 and n >= 30 for n, size in blobs) and any(n > 30 for n, _ in blobs)
    a = next(r for r in outcome.head_run.results if r.case_id.endswith("::a"))
    assert len(a.samples_ms) == 30 and struct.calcsize("<30d") == 240


def test_ab_runs_stay_out_of_trends_change_points_and_the_dashboard_series(stored):
    from perfgate.report.site.history_data import case_series, latest_runs_by_device, load_runs
    from perfgate.store.window import recent_passing_gate_medians
    from perfgate.trends.history import case_series as change_series
    from perfgate.trends.history import series_keys

    db, outcome, _ = stored
    with open_store(db, readonly=True) as store:
        trend = store.history("test_perf.py::a")
        steps = change_series(store, "test_perf.py::a", make_run({}).environment.device_name)
        keys = series_keys(store)
        site = case_series(store, "test_perf.py::a", load_runs(store))
        latest = dict(latest_runs_by_device(store))
        env = outcome.head_run.environment
        window = recent_passing_gate_medians(store, env.comparability_key(), None, 30, ["test_perf.py::a"], {})
    assert [p.run_id for p in trend] == [1]
    assert [p.run_id for p in steps] == [1]
    assert all(device != "stand-in GPU" for _, device in keys)
    assert [p.run_id for s in site for p in s.points] == [1] and latest == {"test_perf.py::a": 1}
    assert not any(window.values())  # no A/B side is a passing gate run of the case


def test_perfgate_history_lists_ab_runs_only_when_asked(stored, capsys):
    db, _, _ = stored
    assert main(["history", "--db", str(db), "--format", "csv"]) == 0
    default = capsys.readouterr().out
    assert main(["history", "--db", str(db), "--format", "csv", "--kind", "ab"]) == 0
    ab = capsys.readouterr().out
    assert "ab-head" not in default and default.count("\n") == 2
    assert "ab-head" in ab and "ab-base" in ab and "gate" not in ab.replace("gate_", "").split("\n", 1)[1]


def test_the_history_docstring_example_does_not_raise_on_ab_runs(stored):
    pytest.importorskip("pandas")
    import perfgate

    db, _, _ = stored
    frame = perfgate.history(db=db, case="*", last=30)
    frame.pivot(index="started_at", columns="case_id", values="median_ms")
    assert set(perfgate.history(db=db, kind="ab")["kind"]) == {"ab-base", "ab-head"}


def test_ab_runs_stored_by_an_earlier_perfgate_become_ab_runs_on_migration(tmp_path):
    from perfgate.store.migrate import migrate

    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    migrate(con, path, target=8)  # the version before A/B runs had kinds of their own
    for uid, commit_ in (("p1-base", "b" * 40), ("p1-head", "h" * 40), ("plain", "g" * 40)):
        settings = "ab: 20 rounds x up to 3 stages, seed 1" if uid.startswith("p1") else ""
        con.execute(
            "INSERT INTO runs (run_uid, kind, git_commit, profile_settings, started_at, finished_at) "
            "VALUES (?, 'gate', ?, ?, '2026-01-01T00:00:00+00:00', '2026-01-01T00:01:00+00:00')",
            (uid, commit_, settings),
        )
    con.commit()
    con.close()
    with open_store(path) as store:
        rows = store.query("SELECT run_uid, kind, ab_pair FROM runs ORDER BY id")
        [pair] = ab_comparisons(store, 5)
    assert [(r["kind"], r["ab_pair"]) for r in rows] == [("ab-base", "p1"), ("ab-head", "p1"), ("gate", None)]
    assert pair.base_commit == "b" * 40
