"""`perfgate history --changes`: change points per case and device model, with commit ranges, on a synthetic
history with a known step and on recorded H100 process medians."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perfgate.cli import main
from perfgate.model import Environment, Run, RunInfo
from perfgate.store import open_store
from perfgate.trends.history import history_change_points
from tests.site_histories import recorded_h100_history, single_median_case

A100 = Environment(device_kind="cuda", device_name="NVIDIA A100-SXM4-80GB", compute_capability="8.0")
H100 = Environment(device_kind="cuda", device_name="NVIDIA H100 80GB HBM3", compute_capability="9.0")


def stepped_history(db: Path, step_at: int = 20, runs: int = 30, same_commit: bool = False) -> None:
    """Two cases on two device models; `k::slow` gets 4% slower at commit c<step_at> on the H100 only."""
    rng = np.random.default_rng(0)
    with open_store(db) as store:
        for i in range(runs):
            for env in (H100, A100):
                slow = 0.2 * (1 + 0.003 * rng.standard_normal()) * (1.04 if env is H100 and i >= step_at else 1.0)
                flat = 0.1 * (1 + 0.003 * rng.standard_normal())
                info = RunInfo(
                    f"2026-11-01T00:{i:02d}:00+00:00",
                    "",
                    git_commit=("c00" if same_commit else f"c{i:02d}") + "0" * 37,
                    git_branch="main" if i % 5 else "feature",
                )
                store.save_run(
                    Run(info, env, (single_median_case("k::slow", slow), single_median_case("k::flat", flat)))
                )


def test_a_step_is_named_with_its_commit_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "h.db"
    stepped_history(db)
    assert main(["history", "--changes", "--db", str(db), "--rootdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("perfgate: 1 change point(s) in 4 case series on 2 device model(s)")
    (line,) = [x for x in out.splitlines() if x.startswith("k::slow")]
    assert "NVIDIA H100 80GB HBM3" in line
    assert "c19000000000..c20000000000" in line  # last commit before, first after
    assert "+4." in line


def test_a_step_between_two_runs_of_the_same_commit_is_named_a_machine_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.db"
    stepped_history(db, same_commit=True)
    assert main(["history", "--changes", "--db", str(db), "--rootdir", str(tmp_path)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("k::slow")]
    assert line.rstrip().endswith("machine (same commit)")
    main(["history", "--changes", "--db", str(db), "--rootdir", str(tmp_path), "--format", "json"])
    assert [row["cause"] for row in json.loads(capsys.readouterr().out)] == ["machine"]
    stepped_history(tmp_path / "other.db")
    main(["history", "--changes", "--db", str(tmp_path / "other.db"), "--rootdir", str(tmp_path), "--format", "json"])
    assert [row["cause"] for row in json.loads(capsys.readouterr().out)] == ["code or machine"]


def test_changes_as_json_and_filtered_by_case_and_branch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "h.db"
    stepped_history(db)
    main(["history", "--changes", "--db", str(db), "--rootdir", str(tmp_path), "--format", "json"])
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["case_id"], row["last_before_commit"][:3], row["first_after_commit"][:3]) == ("k::slow", "c19", "c20")
    assert row["change_pct"] == pytest.approx(4.0, abs=0.6)
    main(["history", "--changes", "--db", str(db), "--rootdir", str(tmp_path), "--case", "*flat", "--format", "json"])
    assert json.loads(capsys.readouterr().out) == []
    with open_store(db, readonly=True) as store:
        (on_main,) = [c for c in history_change_points(store, "k::slow", branch="main") if c.changes]
    assert on_main.points == 24  # every fifth run was on a feature branch
    assert on_main.changes[0].first_after.git_commit.startswith("c21")  # c20 is a feature-branch run


def test_the_store_function_returns_every_series(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    stepped_history(db)
    with open_store(db, readonly=True) as store:
        found = {(c.case_id, c.device_name): len(c.changes) for c in history_change_points(store)}
    assert found == {
        ("k::flat", A100.device_name): 0,
        ("k::flat", H100.device_name): 0,
        ("k::slow", A100.device_name): 0,
        ("k::slow", H100.device_name): 1,
    }


def test_recorded_h100_history_names_the_injected_slowdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The recorded H100 history (tests/site_histories.py): 24 unchanged processes of session C's cases,
    then 4 slowed by 5%. The quiet cases step at the first slowed run; the gate runs of session A2 have none."""
    db, _ = recorded_h100_history(tmp_path / "h.db", tmp_path / "baselines")
    main(["history", "--changes", "--db", str(db), "--rootdir", str(tmp_path), "--format", "json"])
    rows = json.loads(capsys.readouterr().out)
    named = {r["case_id"].split("::")[1] for r in rows}
    assert {"attention", "copy", "gelu", "layer_norm", "small_add", "softmax"} <= named
    assert all(r["first_after_commit"] == "c-slowed-5%" and r["last_before_commit"] == "c-unchanged" for r in rows)
    assert all(r["change_pct"] > 4 for r in rows)
    assert not any(r["case_id"].startswith("kernels/") for r in rows)


def test_empty_history_and_bad_minimum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "h.db"
    open_store(db).close()
    assert main(["history", "--changes", "--db", str(db), "--rootdir", str(tmp_path)]) == 0
    assert "0 change point(s) in 0 case series" in capsys.readouterr().out
    assert main(["history", "--changes", "--db", str(db), "--rootdir", str(tmp_path), "--min-change", "nan"]) == 2
    assert "--min-change" in capsys.readouterr().err


def test_a_damaged_median_is_refused_as_history_case_refuses_it(tmp_path: Path) -> None:
    from perfgate.errors import StoreError

    db = tmp_path / "h.db"
    stepped_history(db, runs=12)
    with open_store(db) as store:
        run = store.load_run(1)
        store.save_run(
            replace(run, info=replace(run.info, run_uid="zero"), results=(single_median_case("k::slow", 1.0),))
        )
        store.con.execute("UPDATE cases SET median_ms = 0 WHERE run_id = (SELECT max(id) FROM runs)")
        with pytest.raises(StoreError, match="median_ms"):
            list(history_change_points(store, "k::slow"))
