import random
from dataclasses import replace

from perfgate.baseline import updated_baseline
from perfgate.compare import compare_run
from perfgate.model import Metric, Verdict
from perfgate.settings import settings_from_config
from tests.test_baseline import ENV, make_run

SETTINGS = settings_from_config({"threshold_pct": 3.0})


def noisy(center: float, n: int = 60, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.gauss(0, 0.005)) for _ in range(n)]


def baseline_of(run, tmp_path):
    return updated_baseline(None, run, tmp_path / "b.json", "t", "r")


def verdict(gate, case="a", metric="median_ms", kernel=""):
    return next(c for c in gate.comparisons if c.case_id == case and c.metric == metric and c.kernel == kernel)


def test_slower_beyond_threshold_and_significant_regresses(tmp_path):
    base = baseline_of(make_run({"a": noisy(1.0)}), tmp_path)
    gate = compare_run(make_run({"a": noisy(1.10, seed=1)}).results, base, ENV, SETTINGS)
    row = verdict(gate)
    assert row.verdict is Verdict.REGRESSED and gate.failed
    assert row.p_value < 0.01 and 8 < row.change_pct < 12
    assert row.ci_low_pct < row.change_pct < row.ci_high_pct


def test_significant_but_small_change_is_unchanged(tmp_path):
    base = baseline_of(make_run({"a": noisy(1.0)}), tmp_path)
    gate = compare_run(make_run({"a": noisy(1.02, seed=1)}).results, base, ENV, SETTINGS)
    assert verdict(gate).verdict is Verdict.UNCHANGED and not gate.failed


def test_large_change_without_significance_is_unchanged(tmp_path):
    base = baseline_of(make_run({"a": [1.0, 1.5, 0.5, 1.2, 0.8]}), tmp_path)
    gate = compare_run(make_run({"a": [1.3, 0.6, 1.6, 0.9, 1.1]}).results, base, ENV, SETTINGS)
    assert verdict(gate).verdict is Verdict.UNCHANGED


def test_faster_is_improved_and_passes(tmp_path):
    base = baseline_of(make_run({"a": noisy(1.0)}), tmp_path)
    gate = compare_run(make_run({"a": noisy(0.8, seed=1)}).results, base, ENV, SETTINGS)
    assert verdict(gate).verdict is Verdict.IMPROVED and not gate.failed


def test_new_and_missing_cases(tmp_path):
    base = baseline_of(make_run({"a": noisy(1.0)}), tmp_path)
    gate = compare_run(make_run({"b": noisy(1.0)}).results, base, ENV, SETTINGS)
    assert verdict(gate, "b").verdict is Verdict.NEW
    assert verdict(gate, "a").verdict is Verdict.MISSING
    assert not gate.failed


def test_other_device_model_is_not_comparable_unless_allowed(tmp_path):
    base = baseline_of(make_run({"a": noisy(1.0)}), tmp_path)
    base = replace(base, environment=replace(ENV, device_name="NVIDIA A100-SXM4-80GB", compute_capability="8.0"))
    gate = compare_run(make_run({"a": noisy(2.0)}).results, base, ENV, SETTINGS)
    row = verdict(gate)
    assert row.verdict is Verdict.NOT_COMPARABLE and "A100" in row.note and not gate.failed
    allowed = compare_run(make_run({"a": noisy(2.0)}).results, base, ENV, replace(SETTINGS, allow_env_mismatch=True))
    assert verdict(allowed).verdict is Verdict.REGRESSED


def _with_metrics(samples, *metrics):
    return make_run({"a": samples}, metrics=metrics)


def test_register_growth_fails_on_the_counter_and_explains_the_time_regression(tmp_path):
    regs = lambda n: Metric("launch__registers_per_thread", n, "register/thread", "ncu", "k")  # noqa: E731
    occ = lambda p: Metric("sm__warps_active.avg.pct_of_peak_sustained_active", p, "%", "ncu", "k")  # noqa: E731
    dram = Metric("dram__bytes_read.sum", 1e9, "byte", "ncu", "k")
    base = baseline_of(_with_metrics(noisy(1.0), regs(64), occ(81.0), dram), tmp_path)
    gate = compare_run(_with_metrics(noisy(1.3, seed=2), regs(128), occ(40.0), dram).results, base, ENV, SETTINGS)
    assert verdict(gate, metric="launch__registers_per_thread", kernel="k").verdict is Verdict.REGRESSED
    assert verdict(gate, metric="sm__warps_active.avg.pct_of_peak_sustained_active", kernel="k").verdict is Verdict.REGRESSED
    why = gate.explanations["a"]
    assert why[0].metric == "launch__registers_per_thread"  # counters first: the likely cause
    assert any(c.metric == "dram__bytes_read.sum" and c.baseline == c.current for c in why)  # ruled out


def test_spills_appearing_from_zero_regress(tmp_path):
    spills = lambda n: Metric("derived__local_spilling_requests", n, "request", "ncu", "k")  # noqa: E731
    base = baseline_of(_with_metrics(noisy(1.0), spills(0)), tmp_path)
    gate = compare_run(_with_metrics(noisy(1.0, seed=1), spills(4096)).results, base, ENV, SETTINGS)
    assert verdict(gate, metric="derived__local_spilling_requests", kernel="k").verdict is Verdict.REGRESSED


def test_percent_metric_wobble_near_zero_is_unchanged(tmp_path):
    hit = lambda p: Metric("l1tex__t_sector_hit_rate.pct", p, "%", "ncu", "k")  # noqa: E731
    base = baseline_of(_with_metrics(noisy(1.0), hit(0.0)), tmp_path)
    gate = compare_run(_with_metrics(noisy(1.0, seed=1), hit(0.02)).results, base, ENV, SETTINGS)
    assert verdict(gate, metric="l1tex__t_sector_hit_rate.pct", kernel="k").verdict is Verdict.UNCHANGED


def test_profile_failure_fails_the_gate_only_when_configured(tmp_path):
    base = baseline_of(make_run({"a": noisy(1.0)}), tmp_path)
    res = make_run({"a": noisy(1.0, seed=1)}).results[0].with_metrics((), ("ncu: timed out",))
    assert not compare_run([res], base, ENV, SETTINGS).failed
    strict = replace(SETTINGS, fail_on_profile_error=True)
    gate = compare_run([res], base, ENV, strict)
    assert gate.failed and gate.by_verdict(Verdict.PROFILE_FAILED)[0].note == "ncu: timed out"
