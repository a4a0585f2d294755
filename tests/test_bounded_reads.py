"""Every step pays for its own work: what a gate reads from the history is the same at 110 and at 400 stored
runs per case (and so at 100,000: scripts/fleet_bench.py measures that), counted, not timed: the rows a
SQLite query visits (its virtual machine's steps) and the rows a server's tables hand out
(pg_stat_xact_user_tables), on both backends. A gate looks at most a bounded number of runs back: its
change-point look RECENT_RUNS (100), its noise window LOOK_BACK_FACTOR x the window (here 3 x 30, so that
both bounds are reached at 110 runs).

Before bounded reads, the gate's change-point look (`recent_changes`) read every stored run of each case,
and `history --case` listed every case id ever stored: both grew with the history."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from perfgate.model import Comparison, Direction, GateResult, RunKind, Verdict
from perfgate.store import Store, open_store, window
from perfgate.store.query import case_trend
from perfgate.store.target import ServerUrl
from perfgate.store.verdicts import verdicts_of
from perfgate.store.window import recent_passing_gate_medians
from perfgate.trends.history import recent_changes
from tests.helpers import ENV, make_run

CASES = 12
GATED = [f"t.py::case{i}" for i in range(CASES)]


def _history(target: Path | ServerUrl, runs: int) -> None:
    """`runs` gate runs of CASES cases on one device model, plus a retired case of as many runs."""
    template = make_run({cid: [1.0, 1.01, 0.99] for cid in [*GATED, "t.py::retired"]}, env=ENV)
    gate = verdicts_of(
        GateResult(
            comparisons=tuple(
                Comparison(c.case_id, "median_ms", "ms", Direction.LOWER, Verdict.UNCHANGED) for c in template.results
            )
        )
    )
    batch = []
    for i in range(runs):
        info = replace(template.info, run_uid=f"r{i}", kind=RunKind.GATE, git_branch="main", git_commit=f"c{i}")
        batch.append((replace(template, info=info), replace(gate, gate_failed=False)))
    with open_store(target) as store:
        for start in range(0, runs, 50):
            store.save_runs(batch[start : start + 50])


@contextlib.contextmanager
def _counted(store: Store) -> Iterator[list[int]]:
    """The rows the database visits inside the block: SQLite's VM steps (in hundreds), a server's tuples
    read from its tables and indexes in one transaction."""
    count = [0]
    if not store.on_server:
        con = store.db.con  # type: ignore[attr-defined]

        def tick() -> int:
            count[0] += 1
            return 0

        con.set_progress_handler(tick, 100)
        try:
            yield count
        finally:
            con.set_progress_handler(None, 100)
        return
    sql = (
        "SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0) AS n "
        "FROM pg_stat_xact_user_tables"
    )
    with store.db.transaction():  # the view also holds earlier transactions' counts not yet flushed
        before = int(store.db.rows(sql)[0]["n"])
        yield count
        count[0] = int(store.db.rows(sql)[0]["n"]) - before


def _gate_reads(target: Path | ServerUrl) -> tuple[int, int]:
    """What a gate reads: the window starts, the noise window and the change-point look of its cases."""
    with open_store(target, readonly=True) as store:
        rows_before = store.db.rows_read
        with _counted(store) as visited:
            starts = store.window_starts(ENV.device_name, GATED, after="2026-01-01T00:00:00+00:00")
            window = recent_passing_gate_medians(store, ENV.comparability_key(), "main", 30, GATED, starts)
            changes = recent_changes(store, GATED, ENV.device_name, "main")
            for cid in GATED:
                store.history(cid, ENV.device_name)
        assert all(len(points) == 30 for points in window.values()) and changes == []
        return visited[0], store.db.rows_read - rows_before


def test_a_gate_reads_the_same_at_110_and_at_400_runs_per_case(tmp_path, history_target, monkeypatch):
    monkeypatch.setattr(window, "LOOK_BACK_FACTOR", 3)
    shallow = tmp_path / "shallow.db" if isinstance(history_target, Path) else None
    if shallow is None:  # a second schema on the same server
        from tests.backends import server_history

        with server_history() as small:
            _history(small, 110)
            few = _gate_reads(small)
    else:
        _history(shallow, 110)
        few = _gate_reads(shallow)
    _history(history_target, 400)
    many = _gate_reads(history_target)
    assert many[1] == few[1]  # rows handed to Python: the same
    assert many[0] <= few[0] * 1.15 + 20, (few, many)  # rows visited: flat


def test_history_of_the_last_runs_lists_the_cases_of_those_runs_only(tmp_path):
    db = tmp_path / "h.db"
    _history(db, 30)
    with open_store(db) as store:
        store.save_run(make_run({"t.py::new": [1.0, 2.0]}, env=ENV))
        with _counted(store) as small:
            rows = case_trend(store, "*", 1)
    assert {r.case_id for r in rows} == {"t.py::new"}
    _history(tmp_path / "deep.db", 300)
    with open_store(tmp_path / "deep.db") as store:
        store.save_run(make_run({"t.py::new": [1.0, 2.0]}, env=ENV))
        with _counted(store) as large:
            case_trend(store, "*", 1)
    assert large[0] <= small[0] * 1.15 + 20, (small, large)


def _steps_of_command(monkeypatch, argv: list[str]) -> int:
    """SQLite VM steps (in hundreds) of every history connection one command opens."""
    from perfgate.cli import main
    from perfgate.store import sqlite

    count = [0]
    real = sqlite._connect

    def counted(path, uri):
        con = real(path, uri)

        def tick() -> int:
            count[0] += 1
            return 0

        con.set_progress_handler(tick, 100)
        return con

    monkeypatch.setattr(sqlite, "_connect", counted)
    assert main(argv) in (0, 1)
    return count[0]


def test_compare_reads_the_stored_run_only_whatever_the_history_holds(tmp_path, monkeypatch, capsys):
    from perfgate.baseline.write import updated_baseline, write_baseline

    baseline = tmp_path / "b.json"
    write_baseline(updated_baseline(None, make_run({cid: [1.0, 1.01] for cid in GATED}, env=ENV), baseline, "x", "r"))
    steps = []
    for runs in (12, 240):
        db = tmp_path / f"{runs}.db"
        _history(db, runs)
        steps.append(_steps_of_command(monkeypatch, ["compare", "--db", str(db), "--baseline-file", str(baseline)]))
    capsys.readouterr()
    assert steps[1] <= steps[0] * 1.15 + 20, steps


def test_merge_reads_a_batch_of_runs_with_a_few_queries_not_a_few_per_run(tmp_path, monkeypatch):
    """`db merge` reads each input's runs a batch at a time (one query per table), and asks OUT about a
    batch's identities at once: the reads do not grow with the runs (before: ~8 queries per run)."""
    from perfgate.store.merge import merge_histories
    from perfgate.store.sqlite import SqliteDatabase

    reads = [0]
    for method in ("rows", "tuples"):
        real = getattr(SqliteDatabase, method)

        def counted(self, *args, _real=real, **kwargs):
            reads[0] += 1
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(SqliteDatabase, method, counted)
    counts = []
    for runs in (10, 120):
        source = tmp_path / f"in{runs}.db"
        _history(source, runs)
        reads[0] = 0
        (merged,) = merge_histories(tmp_path / f"out{runs}.db", [source])
        assert merged.added == runs
        counts.append(reads[0])
    assert counts[1] == counts[0], counts
