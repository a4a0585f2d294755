"""The history as data (issue 20): run kinds and verdicts stored with each run, literal case patterns, the
DataFrame's columns, the Datasette metadata against a real history, pinned runs and pruning, merging runs
that have no identity, and the noise window the decision rule reads."""

import asyncio
import datetime as dt
import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.model import Comparison, Direction, GateResult, RunKind, Verdict
from perfgate.store import open_store
from perfgate.store.merge import merge_histories
from perfgate.store.metadata import datasette_metadata
from perfgate.store.prune import BaselineRefs, plan_prune, remove_runs
from perfgate.store.verdicts import verdicts_of
from perfgate.store.verify import expected_schema
from perfgate.store.window import PassingGateMedian, recent_passing_gate_medians
from tests.backends import db_arg
from tests.helpers import ENV, gate_json, make_run, noisy, perf_project

BRACKETED = "tests/test_x.py::test_x[enum[BaseConverter]]"


def _cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _gate(verdicts: dict[str, Verdict], failed: bool = False):
    rows = tuple(Comparison(cid, "median_ms", "ms", Direction.LOWER, v, change_pct=1.0) for cid, v in verdicts.items())
    gate = GateResult(comparisons=rows)
    return replace(verdicts_of(gate), gate_failed=failed)


def _run(
    medians: dict[str, float],
    branch="main",
    kind=RunKind.GATE,
    started="2026-11-21T00:00:00+00:00",
    commit="abc",
    env=ENV,
    dirty=False,
):
    run = make_run({cid: noisy(m, n=20) for cid, m in medians.items()}, env=env)
    return replace(
        run,
        info=replace(
            run.info,
            git_branch=branch,
            kind=kind,
            started_at=started,
            finished_at=started,
            git_commit=commit,
            git_dirty=dirty,
        ),
    )


# --- kinds, verdicts, patterns, DataFrame -------------------------------------------------------------


def test_a_gate_stores_its_run_with_kind_and_every_verdict(pytester, monkeypatch):
    perf_project(
        pytester,
        monkeypatch,
        "from perfgate.measure import clock\ndef test_a(perfgate):\n    perfgate(clock.current().sleep, 0.001)\n",
        "[tool.perfgate]\nmin_samples = 5\nmax_samples = 10\nbudget_ms = 30\nwarmup_ms = 1\nconfirm_runs = 0\n",
    )
    gate_json(pytester)
    with open_store(pytester.path / ".perfgate" / "history.db", readonly=True) as store:
        run = store.load_run()
        verdicts = store.load_verdicts(run.run_id)
        row = store.query("SELECT kind, gate_failed FROM runs")[0]
        case_verdict = store.query("SELECT verdict FROM cases")[0]["verdict"]
    assert run.info.kind is RunKind.GATE and row == {"kind": "gate", "gate_failed": 0}
    assert verdicts is not None and [(m.metric, m.verdict) for m in verdicts.metrics] == [("median_ms", Verdict.NEW)]
    assert case_verdict == "new"


def test_verdicts_and_kinds_round_trip_and_the_case_shows_its_most_severe(history_target):
    with open_store(history_target) as store:
        run = _run({"a": 1.0, "b": 2.0})
        gate = GateResult(
            comparisons=(
                Comparison("a", "median_ms", "ms", Direction.LOWER, Verdict.UNCHANGED),
                Comparison("a", "launch__registers_per_thread", "register", Direction.LOWER, Verdict.REGRESSED, "k"),
                Comparison("b", "median_ms", "ms", Direction.LOWER, Verdict.IMPROVED, change_pct=float("-inf")),
                Comparison("c", "median_ms", "ms", Direction.LOWER, Verdict.MISSING),
            )
        )
        rid = store.save_run(run, verdicts_of(gate))
        cal = store.save_run(_run({"a": 1.0}, kind=RunKind.CALIBRATION))
        assert store.load_verdicts(rid) == verdicts_of(
            replace(
                gate,
                comparisons=gate.comparisons[:2]
                + (Comparison("b", "median_ms", "ms", Direction.LOWER, Verdict.IMPROVED),)
                + gate.comparisons[3:],
            )
        )
        assert store.load_verdicts(cal) is None and store.load_run(cal).info.kind is RunKind.CALIBRATION
        assert dict(store.db.tuples("SELECT case_id, verdict FROM cases WHERE run_id = :r", {"r": rid})) == {
            "a": "regressed",
            "b": "improved",
        }


@pytest.fixture
def bracketed(tmp_path):
    with open_store(tmp_path / "h.db") as store:
        for i in range(3):
            store.save_run(
                _run({BRACKETED: 1.0 + i, "tests/test_x.py::test_x[e]": 2.0, "t::softmax": 3.0}, dirty=i == 2),
                _gate({BRACKETED: Verdict.UNCHANGED}),
            )
    return tmp_path / "h.db"


@pytest.mark.parametrize(
    "args, ids",
    [
        (("--case", BRACKETED), {BRACKETED}),  # an exact id with brackets matches itself
        (("--case", "*enum[BaseConverter]*"), {BRACKETED}),
        (("--case", "*[e]"), {"tests/test_x.py::test_x[e]"}),  # not a glob class
        (("--case", "tests/test_x.py::test_x[?]"), {"tests/test_x.py::test_x[e]"}),
        (("--case-regex", r"test_x\[(e|enum)"), {BRACKETED, "tests/test_x.py::test_x[e]"}),
        (("--case", "t::*", "--case-regex", "soft"), {"t::softmax"}),
    ],
)
def test_history_case_patterns_treat_brackets_literally(bracketed, capsys, args, ids):
    code, out, _ = _cli(capsys, "history", "--db", str(bracketed), *args, "--format", "json")
    assert code == 0 and {r["case_id"] for r in json.loads(out)} == ids


def test_a_bad_case_regex_is_one_line(bracketed, capsys):
    code, _, err = _cli(capsys, "history", "--db", str(bracketed), "--case-regex", "test_x[")
    assert code == 2 and err.startswith("perfgate: --case-regex 'test_x[' is not a regular expression")


def test_the_dataframe_has_kind_git_dirty_and_verdicts(bracketed):
    import perfgate

    runs = perfgate.history(bracketed)
    assert list(runs["kind"]) == ["gate"] * 3 and list(runs["git_dirty"]) == [False, False, True]
    assert list(runs["gate"]) == ["passed"] * 3
    trend = perfgate.history(bracketed, case=BRACKETED)
    assert list(trend["verdict"]) == ["unchanged"] * 3 and list(trend["git_dirty"]) == [False, False, True]
    assert list(perfgate.history(bracketed, case_regex="softmax")["case_id"]) == ["t::softmax"] * 3


# --- Datasette ------------------------------------------------------------------------------------------


def test_the_datasette_metadata_describes_every_table_view_and_column_of_a_real_history(bracketed):
    meta = datasette_metadata("h")["databases"]["h"]["tables"]
    con = sqlite3.connect(bracketed)
    objects = {
        name
        for (name,) in con.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'"
        )
    }
    assert set(meta) == objects
    for name in objects:
        columns = {r[1] for r in con.execute(f'PRAGMA table_info("{name}")')}
        assert set(meta[name]["columns"]) == columns, name
        assert meta[name]["description"] and all(meta[name]["columns"].values())
    assert set(expected_schema().tables) | set(expected_schema().views) == objects


def test_the_datasette_metadata_names_the_schema_version_the_code_writes():
    from perfgate.store.schema import SCHEMA_VERSION

    description = datasette_metadata("h")["databases"]["h"]["description"]
    assert description == f"A perfgate history (schema version {SCHEMA_VERSION})"


def test_datasette_serves_the_history_with_the_shipped_metadata(bracketed, capsys):
    datasette = pytest.importorskip("datasette.app")
    code, out, _ = _cli(capsys, "db", "metadata", "--db", str(bracketed))
    assert code == 0
    ds = datasette.Datasette([str(bracketed)], metadata=json.loads(out))

    async def fetch():
        page = await ds.client.get("/h/cases")
        view = await ds.client.get("/h/case_history.json?_shape=array")
        return page, view

    page, view = asyncio.run(fetch())
    assert page.status_code == 200 and "every sample (packed)" in page.text
    assert view.status_code == 200 and {r["case_id"] for r in view.json()} >= {BRACKETED}


# --- pins, prune, merge ----------------------------------------------------------------------------------

NOW = dt.datetime(2026, 12, 31, tzinfo=dt.timezone.utc)


@pytest.fixture
def year(history_target):
    """12 runs, one a month; run 3 pinned, run 5 calibrated a baseline (its commit), run 7 wrote one (on each
    backend)."""
    path = history_target
    with open_store(path) as store:
        for month in range(1, 13):
            kind = RunKind.CALIBRATION if month == 5 else RunKind.GATE
            store.save_run(
                _run({"a": 1.0}, kind=kind, started=f"2026-{month:02d}-15T00:00:00+00:00", commit=f"c{month}")
            )
        store.pin_run(3, "change point: a +12%", "2026-03-16T00:00:00+00:00")
    return path


def _refs():
    return BaselineRefs(commits=frozenset({"c5"}), finished_at=frozenset({"2026-11-21T00:01:00+00:00-never"}))


def test_prune_keeps_the_newest_and_never_a_pinned_or_baseline_run(year):
    with open_store(year) as store:
        plan = plan_prune(store, NOW, keep_runs=4, older_than_days=None, refs=_refs())
        assert plan.remove == (1, 2, 4, 6, 7, 8) and (plan.kept_pinned, plan.kept_by_baseline) == (1, 1)
        remove_runs(store, plan.remove)
        assert store.run_ids() == [3, 5, 9, 10, 11, 12]
        assert store.load_run(3).results and [p.run_id for p in store.pinned_runs()] == [3]


def test_prune_by_age_removes_only_old_runs(year):
    with open_store(year) as store:
        plan = plan_prune(store, NOW, keep_runs=None, older_than_days=200, refs=_refs())
        assert plan.remove == (1, 2, 4)  # before mid-June, less the pinned and the baseline's


def test_removing_a_pinned_run_is_refused_and_nothing_changes(year):
    from perfgate.errors import StoreError

    with open_store(year) as store:
        with pytest.raises(StoreError, match="run 3 is pinned"):
            remove_runs(store, [1, 3])
        assert len(store.run_ids()) == 12


def test_db_prune_from_the_command_line_reads_the_committed_baselines(year, tmp_path, capsys, monkeypatch):
    from perfgate.baseline.write import updated_baseline, write_baseline

    monkeypatch.chdir(tmp_path)
    with open_store(year, readonly=True) as store:
        calibration = store.load_run(5)
    write_baseline(
        updated_baseline(None, calibration, tmp_path / "baselines" / "nvidia-h100-80gb-hbm3.json", "x", "calibrated")
    )
    code, out, _ = _cli(capsys, "db", "prune", "--db", db_arg(year), "--keep-runs", "2", "--dry-run")
    assert code == 0 and "would remove 8 of 12 run(s); kept 1 pinned and 1 a baseline refers to" in out
    code, out, _ = _cli(capsys, "db", "prune", "--db", db_arg(year), "--keep-runs", "2")
    assert code == 0 and "removed 8 of 12" in out
    with open_store(year, readonly=True) as store:
        assert store.run_ids() == [3, 5, 11, 12]
    if isinstance(year, Path):
        assert not sqlite3.connect(year).execute("PRAGMA freelist_count").fetchone()[0]  # compacted


def test_prune_needs_to_be_told_what_to_keep(year, capsys):
    code, _, err = _cli(capsys, "db", "prune", "--db", db_arg(year))
    assert code == 2 and "--keep-runs N and/or --older-than DAYS" in err


def test_db_pin_from_the_command_line(year, capsys):
    assert _cli(capsys, "db", "pin", "7", "--db", db_arg(year), "--reason", "incident 42")[0] == 0
    with open_store(year, readonly=True) as store:
        assert {p.run_id: p.reason for p in store.pinned_runs()}[7] == "incident 42"
    code, _, err = _cli(capsys, "db", "pin", "99", "--db", db_arg(year), "--reason", "x")
    assert code == 2 and "has no run 99" in err


def test_merging_runs_without_a_uid_three_times_adds_them_once(tmp_path, history_target):
    src, out = tmp_path / "src.db", history_target
    with open_store(src) as store:
        for i in range(5):
            store.save_run(_run({"a": 1.0 + i}))
    con = sqlite3.connect(src)
    con.execute("UPDATE runs SET run_uid = NULL")  # as a hand-edited or foreign history has them
    con.commit()
    con.close()
    for _ in range(3):
        merge_histories(out, [src])
    with open_store(out, readonly=True) as store:
        assert len(store.run_ids()) == 5


def test_merge_copies_kind_verdicts_and_pins(year, tmp_path):
    with open_store(year) as store:
        store.save_run(_run({"a": 1.0}), _gate({"a": Verdict.REGRESSED}, failed=True))
    out = tmp_path / "out.db"
    merge_histories(out, [year])
    with open_store(out, readonly=True) as store:
        assert store.load_run(5).info.kind is RunKind.CALIBRATION
        assert store.load_verdicts(13) == _gate({"a": Verdict.REGRESSED}, failed=True)
        assert [(p.run_id, p.reason) for p in store.pinned_runs()] == [(3, "change point: a +12%")]


def test_db_export_writes_only_the_named_run(year, tmp_path, capsys):
    with open_store(year, readonly=True) as store:
        uid = store.load_run(4).info.run_uid
    results = tmp_path / "perfgate.json"
    results.write_text(json.dumps({"run": {"run_uid": uid}}))
    code, out, _ = _cli(
        capsys, "db", "export", str(tmp_path / "job.db"), "--db", db_arg(year), "--results", str(results)
    )
    assert code == 0 and "exported 1 run(s)" in out
    with open_store(tmp_path / "job.db", readonly=True) as store:
        assert [store.load_run(r).info.run_uid for r in store.run_ids()] == [uid]
    results.write_text("{}")
    code, _, err = _cli(
        capsys, "db", "export", str(tmp_path / "j2.db"), "--db", db_arg(year), "--results", str(results)
    )
    assert code == 2 and "no run.run_uid" in err


# --- the noise window ------------------------------------------------------------------------------------


def test_the_noise_window_reads_recent_passing_gate_runs_of_one_branch_and_device(history_target):
    from tests.helpers import HOST_ENV

    key = ENV.comparability_key()
    with open_store(history_target) as store:
        ids = {}
        for i in range(1, 8):
            ids[i] = store.save_run(
                _run({"a": float(i), "b": 10.0 + i}, commit=f"c{i}"),
                _gate({"a": Verdict.UNCHANGED, "b": Verdict.UNCHANGED}),
            )
        store.save_run(_run({"a": 100.0}), _gate({"a": Verdict.REGRESSED}, failed=True))  # failed gate
        store.save_run(_run({"a": 200.0, "b": 1.0}), _gate({"a": Verdict.REGRESSED, "b": Verdict.UNCHANGED}))
        store.save_run(_run({"a": 300.0}, branch="feature"), _gate({"a": Verdict.UNCHANGED}))
        store.save_run(_run({"a": 400.0}, kind=RunKind.CALIBRATION))
        store.save_run(_run({"a": 500.0}, env=HOST_ENV), _gate({"a": Verdict.UNCHANGED}))
        store.save_run(_run({"a": 600.0}))  # stored without a gate result
        window = recent_passing_gate_medians(store, key, "main", 3, ["a", "b", "zzz"])
        assert [p.median_ms for p in window["a"]] == pytest.approx([7.0, 6.0, 5.0], rel=0.02)
        assert [p.run_id for p in window["b"]][0] == 9 and window["zzz"] == ()
        first = window["a"][0]
        assert first == PassingGateMedian(
            ids[7], "c7", "2026-11-21T00:00:00+00:00", first.median_ms, None, verdict=first.verdict
        )
        since = recent_passing_gate_medians(store, key, "main", 30, ["a"], from_run_id=ids[6])
        assert [p.run_id for p in since["a"]] == [ids[7], ids[6]]  # a change point resets the window


def test_an_inconclusive_run_stays_in_the_noise_window_and_a_regressed_one_does_not(history_target):
    """An inconclusive run is a draw of the case's noise, most often of its slow side: leaving it out
    truncated that side and unchanged code failed ever more often (issue 31,
    tests/test_window_keeps_inconclusive.py). A regressed case stays out even where its gate passed."""
    with open_store(history_target) as store:
        store.save_run(_run({"a": 1.0}), _gate({"a": Verdict.UNCHANGED}))
        store.save_run(_run({"a": 1.03}), _gate({"a": Verdict.INCONCLUSIVE}))
        store.save_run(_run({"a": 1.2}), _gate({"a": Verdict.BELOW_TARGET}))
        store.save_run(_run({"a": 0.99}), _gate({"a": Verdict.IMPROVED}))
        window = recent_passing_gate_medians(store, ENV.comparability_key(), "main", 30, ["a"])
    assert [p.median_ms for p in window["a"]] == pytest.approx([0.99, 1.03, 1.0], rel=0.02)


def test_a_failed_run_keeps_its_other_cases_in_their_noise_window(history_target):
    """A slow mode the calibration missed shows in the runs it makes fail: leaving every case of a failed run
    out kept it out of every case's noise (issue 31: 7-8 of 50 unchanged 100-case runs failed). Only the
    failing case stays out."""
    with open_store(history_target) as store:
        store.save_run(_run({"a": 1.0, "b": 2.0}), _gate({"a": Verdict.UNCHANGED, "b": Verdict.UNCHANGED}))
        store.save_run(
            _run({"a": 1.5, "b": 2.06}), _gate({"a": Verdict.REGRESSED, "b": Verdict.INCONCLUSIVE}, failed=True)
        )
        window = recent_passing_gate_medians(store, ENV.comparability_key(), "main", 30, ["a", "b"])
    assert [p.median_ms for p in window["b"]] == pytest.approx([2.06, 2.0], rel=0.02)
    assert [p.median_ms for p in window["a"]] == pytest.approx([1.0], rel=0.02)


def test_the_noise_window_carries_speedups(history_target):
    from perfgate.model import Speedup

    run = _run({"a": 1.0})
    a = replace(run.results[0], speedup=Speedup("torch.add", (1.1, 1.2), 1.15, 1.1, 1.2))
    with open_store(history_target) as store:
        store.save_run(replace(run, results=(a,)), _gate({"a": Verdict.UNCHANGED}))
        (point,) = recent_passing_gate_medians(store, ENV.comparability_key(), "main", 5, ["a"])["a"]
    assert point.speedup == 1.15
