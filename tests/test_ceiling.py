"""The ceiling (gate/ceiling.py) for a case timed against a reference (issue 32, requirement 5): its speedup is
the gated signal, its time only reported, and before this change a time ten times slower, with the reference
ten times slower too (the speedup unchanged), passed strict mode: the ceiling looked at gated rows only.
Written first and seen failing (no "beyond the ceiling" finding, gate passed)."""

from __future__ import annotations

from dataclasses import replace

from perfgate.config.settings import settings_from_config
from perfgate.gate.findings import GateFacts
from perfgate.gate.run import evaluate
from perfgate.model import FindingKind, Speedup
from tests.helpers import calibrated, make_run, noisy

STRICT = settings_from_config({"strict": True})


def _with_reference(run, speedup: float):
    r = run.results[0]
    return replace(run, results=(replace(r, speedup=Speedup("torch.add", (speedup,) * 10, speedup, speedup, speedup)),))


def _baseline(tmp_path):
    from tests.helpers import baseline_of

    base = baseline_of(_with_reference(make_run({"a": noisy(1.0)}), 1.5), tmp_path)
    base = calibrated(base, {"a": [1.0, 1.003, 0.997, 1.001, 0.999, 1.0]})
    return replace(base, cases={"a": replace(base.cases["a"], process_speedups=(1.5, 1.501, 1.499, 1.5, 1.502, 1.498))})


def test_a_case_with_a_reference_ten_times_slower_fails_strict_by_the_ceiling(tmp_path):
    slow = _with_reference(make_run({"a": noisy(10.0, seed=1)}), 1.5)  # the reference slowed as much
    gate = evaluate(slow, _baseline(tmp_path), STRICT, GateFacts())
    speedup = next(c for c in gate.comparisons if c.metric == "speedup")
    assert not speedup.verdict.value == "regressed"  # the gated signal did not move
    found = [f for f in gate.findings if f.kind is FindingKind.BEYOND_CEILING]
    assert len(found) == 1 and found[0].case_id == "a" and "time +90" in found[0].message
    assert gate.failed


def test_a_case_with_a_reference_within_the_ceiling_passes_strict(tmp_path):
    slower = _with_reference(make_run({"a": noisy(1.5, seed=1)}), 1.5)  # 50% slower, the speedup unchanged
    gate = evaluate(slower, _baseline(tmp_path), STRICT, GateFacts())
    assert not [f for f in gate.findings if f.kind is FindingKind.BEYOND_CEILING]
