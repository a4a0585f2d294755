"""What the history gained beside the server (migrations 7-11: compiled kernels, provenance, the host CPU, A/B
runs with their kinds and pairing, SM cycles) read and written on each backend (`history_target`): every
column round-trips, the kind filters keep A/B runs out of trends and the noise window, and a run with
kernels is pruned whole."""

from __future__ import annotations

from dataclasses import replace

from perfgate.model import CycleStats, Environment, RunKind
from perfgate.store import open_store
from perfgate.store.ab_pairs import ab_comparison, ab_comparisons
from perfgate.store.prune import remove_runs
from perfgate.store.query import case_trend, list_runs
from perfgate.store.window import recent_passing_gate_medians
from tests.helpers import ENV, case, noisy
from tests.test_static_gate import compiled, kernel

CID = "k.py::test_matmul[4096]"
CYCLES = CycleStats(1.83, 1755.0, 1740.0, 1770.0, 40)


def _run(kind: RunKind, pair: str = "", ms: float = 1.0):
    from perfgate.model import Run, RunInfo

    result = case(CID, noisy(ms), compiled=compiled(kernel(80)), cycles=CYCLES, confirmation_mcycles=(1.8, 1.9))
    env = replace(ENV, cpu_brand="AMD EPYC 9654", cpu_model="25/17/1", cpu_cores="96")
    info = RunInfo("2026-11-21T00:00:00+00:00", "2026-11-21T00:01:00+00:00", git_commit=f"c-{kind.value}")
    return Run(replace(info, kind=kind, ab_pair=pair, git_branch="main"), env, (result,))


def test_kernels_cycles_and_the_cpu_round_trip_and_ab_runs_stay_apart(history_target):
    from perfgate.model import Verdict
    from perfgate.store.verdicts import MetricVerdict, RunVerdicts

    passed = RunVerdicts(False, (MetricVerdict(CID, "median_ms", "", Verdict.UNCHANGED, 0.1, 3.0),))
    with open_store(history_target) as store:
        gate_id = store.save_run(_run(RunKind.GATE), passed)
        base_id, head_id = store.save_runs(
            [(_run(RunKind.AB_BASE, "pr-9"), None), (_run(RunKind.AB_HEAD, "pr-9", 1.3), passed)]
        )
        back = store.load_run(head_id)
        [row] = ab_comparisons(store, 10)
        whole = ab_comparison(store, "pr-9")
        trend = store.history(CID, ENV.device_name)
        window = recent_passing_gate_medians(store, ENV.comparability_key(), "main", 30, [CID])
        listed = {k: [r.run_id for r in list_runs(store, 10, k)] for k in ("", "ab", "all")}
        trends = {k: [r.run_id for r in case_trend(store, CID, 10, kind=k)] for k in ("", "ab")}
    stored = back.results[0]
    assert stored.compiled == compiled(kernel(80)) and stored.cycles == CYCLES
    assert stored.confirmation_mcycles == (1.8, 1.9)
    assert back.info.kind is RunKind.AB_HEAD and back.info.ab_pair == "pr-9"
    assert (back.environment.cpu_brand, back.environment.cpu_cores) == ("AMD EPYC 9654", "96")
    assert (row.head_run_id, row.base_run_id, row.gate) == (head_id, base_id, "passed")
    assert whole is not None and whole.base.info.kind is RunKind.AB_BASE
    assert [p.run_id for p in trend] == [gate_id]  # A/B runs are no point of a case's trend
    assert [p.run_id for p in window[CID]] == [gate_id] and window[CID][0].median_mcycles == CYCLES.median_mcycles
    assert listed == {"": [gate_id], "ab": [base_id, head_id], "all": [gate_id, base_id, head_id]}
    assert trends == {"": [gate_id], "ab": [base_id, head_id]}


def test_a_run_with_compiled_kernels_is_pruned_whole(history_target):
    with open_store(history_target) as store:
        first = store.save_run(_run(RunKind.GATE))
        kept = store.save_run(_run(RunKind.GATE))
        remove_runs(store, [first])
        left = {t: store.query(f"SELECT count(*) AS n FROM {t}")[0]["n"] for t in ("kernels", "compiled_cases")}
        assert store.run_ids() == [kept] and left == {"kernels": 1, "compiled_cases": 1}


def test_a_host_environment_keeps_its_cpu_identity(history_target):
    env = Environment(device_kind="cpu", device_name="AMD EPYC 9654", cpu_brand="AMD EPYC 9654", cpu_cores="96")
    with open_store(history_target) as store:
        run_id = store.save_run(replace(_run(RunKind.GATE), environment=env))
        assert store.load_run(run_id).environment.cpu_cores == "96"
