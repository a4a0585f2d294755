"""Why a green gate might not mean "measured, compared, fine": one finding per reason, one line each.

Without `--perfgate-strict` they are warnings in the terminal and the summary; with it, the kinds in
model.STRICT_KINDS fail the gate. Everything here is derived from the stored run and the baseline, so
`perfgate compare` reports the same findings as the plugin did.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from perfgate.baseline import Baseline
from perfgate.metrics import TIME_METRIC
from perfgate.model import Finding, FindingKind, GateResult, Run, TestOutcome, Timer, Verdict

THROTTLED_FRACTION = 0.5  # a case sampled mostly under a power/thermal cap is flagged
STALE_IMPROVEMENT_PCT = 20.0  # a bigger "improvement" than this suggests the baseline, not the code


@dataclass(frozen=True)
class GateFacts:
    """What the gate knows beyond the run and its baseline."""

    baseline_path: str = ""
    cuda_baselines: tuple[str, ...] = ()  # CUDA baseline files beside a host-clock run's (a GPU went missing)


def findings_for(run: Run, baseline: Baseline | None, gate: GateResult, facts: GateFacts) -> tuple[Finding, ...]:
    return (*_run_level(run, baseline, facts), *_unmeasured(run, baseline), *_per_case(run, baseline, gate))


def _run_level(run: Run, baseline: Baseline | None, facts: GateFacts) -> Iterator[Finding]:
    if not run.results:
        yield Finding(FindingKind.NO_CASES, "no perf case was measured (every perf test skipped, deselected or "
                                            "failed before measuring)")
        return
    if baseline is None:
        where = facts.baseline_path or "the baseline directory"
        yield Finding(FindingKind.NO_BASELINE,
                      f"no baseline for {run.environment.device_name} at {where}: nothing was compared")
    elif not baseline.calibrated:
        yield Finding(FindingKind.UNCALIBRATED, f"baseline {baseline.path.name} is uncalibrated: run `perfgate "
                                                f"calibrate` for per-case thresholds from between-process noise")
    host_cases = [r for r in run.results if r.timing.timer is Timer.HOST]
    if host_cases and facts.cuda_baselines:
        yield Finding(FindingKind.HOST_CLOCK,
                      f"{len(host_cases)} case(s) timed with the host clock while CUDA baselines exist "
                      f"({', '.join(facts.cuda_baselines)}): is the GPU visible?")


def _unmeasured(run: Run, baseline: Baseline | None) -> Iterator[Finding]:
    """A baseline case whose test was collected but skipped or errored (deselection is fine)."""
    if baseline is None:
        return
    measured = {r.case_id for r in run.results}
    for test in run.info.unmeasured:
        cases = [cid for cid in baseline.cases if cid not in measured and _belongs(cid, test.nodeid)]
        if not cases:
            continue
        kind = FindingKind.TEST_SKIPPED if test.outcome is TestOutcome.SKIPPED else FindingKind.TEST_ERRORED
        why = f": {test.reason}" if test.reason else ""
        yield Finding(kind, f"{test.nodeid} {test.outcome.value}{why} ({len(cases)} baseline case(s) not measured)",
                      case_id=cases[0])


def _belongs(case_id: str, nodeid: str) -> bool:
    return case_id == nodeid or case_id.startswith(nodeid + "::")


def _per_case(run: Run, baseline: Baseline | None, gate: GateResult) -> Iterator[Finding]:
    for c in gate.comparisons:
        if c.verdict is Verdict.NOT_COMPARABLE:
            yield Finding(FindingKind.NOT_COMPARABLE, f"{c.case_id}: {c.note}", c.case_id)
        elif c.verdict is Verdict.PROFILE_FAILED:
            yield Finding(FindingKind.PROFILE_FAILED, f"{c.case_id}: {c.note}", c.case_id)
        elif c.metric == TIME_METRIC and c.verdict is Verdict.INCONCLUSIVE:
            yield Finding(FindingKind.INCONCLUSIVE, f"{c.case_id}: {c.change_pct:+.2f}% is above the noise but below "
                                                    f"what it can call ({c.threshold_pct:.2f}%) after {c.processes} "
                                                    f"process(es)", c.case_id)
        elif c.metric == TIME_METRIC and c.change_pct is not None and c.threshold_pct is not None and \
                c.change_pct < -max(STALE_IMPROVEMENT_PCT, 3 * c.threshold_pct):
            yield Finding(FindingKind.STALE_BASELINE, f"{c.case_id}: {c.change_pct:+.1f}% faster than the baseline: "
                                                      f"was it recorded cold, or before an intended change?", c.case_id)
    for r in run.results:
        if r.gpu_state is not None and r.gpu_state.throttled_fraction >= THROTTLED_FRACTION:
            yield Finding(FindingKind.THROTTLED, f"{r.case_id}: sampled under a power/thermal cap "
                                                 f"({100 * r.gpu_state.throttled_fraction:.0f}% of NVML polls, reasons "
                                                 f"0x{r.gpu_state.throttle_reasons:x})", r.case_id)
        base = baseline.cases.get(r.case_id) if baseline else None
        if base is not None and base.autotune and r.autotune and dict(base.autotune) != dict(r.autotune):
            changed = [f"{k}: {v} (baseline {dict(base.autotune).get(k, '-')})" for k, v in r.autotune
                       if dict(base.autotune).get(k) != v]
            yield Finding(FindingKind.AUTOTUNE_CHANGED, f"{r.case_id}: autotuner chose another config, a likely cause "
                                                        f"of a change: {'; '.join(changed)}", r.case_id)
