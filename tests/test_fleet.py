"""The fleet benchmark (scripts/fleet_bench.py) at CI size, on each backend: eight runners storing at once
(each run twice, as a retry would) lose and duplicate nothing, and a gate reads as much from a history of
3,000 runs per case (three GPU models in turn) as from one of 1,000, counted in rows visited."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from perfgate.store import open_store
from tests.helpers import load_script
from tests.test_bounded_reads import _counted

SCRIPT = Path(__file__).parents[1] / "scripts" / "fleet_bench.py"


@pytest.fixture(scope="module")
def fleet():
    # the writers are spawned processes: they import the script by its name, from sys.path (which they inherit)
    if str(SCRIPT.parent) not in sys.path:
        sys.path.insert(0, str(SCRIPT.parent))
    return load_script("fleet_bench")


def test_eight_runners_at_once_store_every_run_once(fleet, history_target):
    found = fleet.fleet_writes(history_target, writers=8, runs=2, cases=60)
    assert (found["runs_stored"], found["lost"], found["duplicated"]) == (16, 0, 0)
    assert found["case_rows"] == found["case_rows_expected"] == 16 * 60
    assert found["bytes_per_case_run"] > 0


def _visited(fleet, target, cases: int) -> int:
    from perfgate.store.window import recent_passing_gate_medians
    from perfgate.trends.history import recent_changes

    env = fleet.gpu(0)
    ids = fleet.case_ids(cases)
    with open_store(target, readonly=True) as store, _counted(store) as visited:
        starts = store.window_starts(env.device_name, ids)
        window = recent_passing_gate_medians(store, env.comparability_key(), "main", 30, ids, starts)
        recent_changes(store, ids, env.device_name, "main")
        for cid in ids:
            store.history(cid, env.device_name)
    assert all(len(points) == 30 for points in window.values())
    return visited[0]


def test_a_gate_reads_as_much_at_3000_runs_per_case_as_at_1000(fleet, history_target, tmp_path):
    from perfgate.store.target import ServerUrl

    fleet.deep_history(history_target, 3000, 5)
    deep = _visited(fleet, history_target, 5)
    if isinstance(history_target, ServerUrl):
        from tests.backends import server_history

        with server_history() as shallow:
            fleet.deep_history(shallow, 1000, 5)
            few = _visited(fleet, shallow, 5)
    else:
        fleet.deep_history(tmp_path / "shallow.db", 1000, 5)
        few = _visited(fleet, tmp_path / "shallow.db", 5)
    assert deep <= few * 1.15 + 20, (few, deep)
