"""Why a green gate might not mean "measured, compared, fine": one finding per reason, one line each.

Without `--perfgate-strict` they are warnings in the terminal and the summary; with it, the kinds in
model.STRICT_KINDS fail the gate. Everything here is derived from the stored run and the baseline, so
`perfgate compare` reports the same findings as the plugin did.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from perfgate.baseline import Baseline
from perfgate.baseline.base_ref import BaseCheck
from perfgate.gate.ceiling import Changes, baseline_changes, beyond_ceiling
from perfgate.gate.common import comes_and_goes, intermittent_message, shift_message
from perfgate.metrics import CYCLES_METRIC, SPEEDUP_METRIC, TIME_METRIC
from perfgate.model import (
    AllowedMissing,
    Comparison,
    Finding,
    FindingKind,
    GateResult,
    HostState,
    Run,
    TestOutcome,
    Verdict,
)

THROTTLED_FRACTION = 0.5  # a case sampled mostly under a power/thermal cap is flagged
LOAD_RISE_PER_CPU = 0.5  # and at least twice the calibration's: a load change worth naming
CPU_CLOCK_DROP = 0.1
STEAL_PCT = 5.0
STALE_IMPROVEMENT_PCT = 20.0  # a bigger "improvement" than this suggests the baseline, not the code


@dataclass(frozen=True)
class GateFacts:
    """What the gate knows beyond the run and its baseline."""

    baseline_path: str = ""
    cuda_baselines: tuple[str, ...] = ()  # CUDA baseline files beside a host-clock run's (a GPU went missing)
    change_points: tuple[str, ...] = ()  # recent steps in the history of this run's cases, one line each
    base: BaseCheck | None = None  # the baseline compared with the pull request's base ref (baseline/base_ref.py)
    past_shifts_pct: tuple[float, ...] = ()  # the noise window's runs' common shifts, newest first (gate/common.py)


SHOWN_MISSING = 5  # case ids named in the one "not measured" finding; the rest are counted


@dataclass(frozen=True)
class Against:
    """What a run was compared with, in the findings' words: the baseline (baseline mode) or the base
    commit's run of the same tests (A/B mode), and where its own `allow_missing` lives."""

    noun: str = "baseline"
    allow_missing_in: str = "[tool.perfgate] allow_missing"


BASELINE = Against()


def findings_for(
    run: Run,
    baseline: Baseline | None,
    gate: GateResult,
    facts: GateFacts,
    allow_missing: Sequence[AllowedMissing] = (),
    ceiling_pct: float = 100.0,
) -> tuple[Finding, ...]:
    """Baseline mode's findings: what only it can find, then what every way of measuring finds."""
    changes = baseline_changes(run, baseline, gate)
    return (
        *baseline_findings(run, baseline, gate, facts),
        *common_findings(run, baseline, gate, facts, allow_missing, changes, ceiling_pct),
    )


def baseline_findings(run: Run, baseline: Baseline | None, gate: GateResult, facts: GateFacts) -> tuple[Finding, ...]:
    """What only a comparison with a calibrated baseline finds: no baseline, an uncalibrated one, the host
    clock beside CUDA baselines, per-case notes (inconclusive, stale, throttled, autotune) and host drift."""
    from perfgate.gate.unseen import run_findings  # a mode the calibration did not see: one note

    found = (*_per_case(run, baseline, gate, facts), *run_findings(run, baseline, gate))
    return (*_run_level(run, baseline, facts), *found, *_host_drift(run, baseline))


def common_findings(
    run: Run,
    against: Baseline | None,
    gate: GateResult,
    facts: GateFacts,
    allow_missing: Sequence[AllowedMissing],
    changes: Changes,
    ceiling_pct: float,
    words: Against = BASELINE,
) -> tuple[Finding, ...]:
    """What every way of measuring finds (gate/run.py's tail calls it for both): what the pull request
    changed in what it is gated with, cases of `against` this run did not measure (skipped, errored,
    deselected, renamed) unless `allow_missing` names them, a process beyond the ceiling, and recent steps
    in the history."""
    return (
        *against_base(facts.base),
        *_unmeasured(run, against, allow_missing, words),
        *_not_measured(run, against, allow_missing, words),
        *beyond_ceiling(gate, changes, ceiling_pct),
        *(Finding(FindingKind.CHANGE_POINT, line) for line in facts.change_points),
    )


def against_base(check: BaseCheck | None) -> Iterator[Finding]:
    """The base ref check's finding (baseline/base_ref.py), in either mode: a changed project root,
    [tool.perfgate] or baseline fails strict mode unless the pull request states it."""
    if check is None:
        return
    if check.unverified:
        yield Finding(
            FindingKind.BASELINE_UNVERIFIED,
            f"cannot compare the baseline with the base ref {check.ref}: {check.unverified}",
        )
    elif check.changes and check.stated:
        yield Finding(FindingKind.BASELINE_CHANGE_STATED, "; ".join(check.changes) + ": stated as intended")
    elif check.changes:
        yield Finding(
            FindingKind.BASELINE_CHANGED,
            "; ".join(check.changes) + ": a pull request that changes what it is gated with must say so "
            "(--perfgate-accept-baseline-change, which the workflow passes for a labelled pull request)",
        )


def _allowed_by(case_id: str, allow_missing: Sequence[AllowedMissing]) -> AllowedMissing | None:
    return next((a for a in allow_missing if fnmatch.fnmatchcase(case_id, a.pattern)), None)


def _not_measured(
    run: Run, baseline: Baseline | None, allow_missing: Sequence[AllowedMissing], words: Against
) -> Iterator[Finding]:
    """Baseline cases this run did not measure and no collected test explains (deselected with -k/-m or
    addopts, dropped by a conftest or collect_ignore, renamed, re-parametrized, measured under another name):
    wherever the deselection came from, a strict gate fails unless `allow_missing` names the case."""
    if baseline is None or not run.results:
        return  # no baseline or nothing measured: reported once, by _run_level
    measured = {r.case_id for r in run.results}
    by_test = _cases_by_test(baseline.cases) if run.info.unmeasured else {}
    explained = {cid for u in run.info.unmeasured for cid in by_test.get(u.nodeid, ())}
    missing = sorted(cid for cid in baseline.cases if cid not in measured and cid not in explained)
    allowed: dict[AllowedMissing, list[str]] = {}
    unexplained = []
    for cid in missing:
        entry = _allowed_by(cid, allow_missing)
        if entry is None:
            unexplained.append(cid)
        else:
            allowed.setdefault(entry, []).append(cid)
    for entry, ids in allowed.items():
        yield Finding(
            FindingKind.ALLOWED_MISSING,
            f"{len(ids)} {words.noun} case(s) not measured, allowed by allow_missing {entry.pattern!r}: {entry.reason}",
            ids[0],
        )
    if unexplained:
        more = f" and {len(unexplained) - SHOWN_MISSING} more" if len(unexplained) > SHOWN_MISSING else ""
        yield Finding(
            FindingKind.NOT_MEASURED,
            f"{len(unexplained)} {words.noun} case(s) not measured (not collected, deselected or renamed): "
            f"{', '.join(unexplained[:SHOWN_MISSING])}{more}; run them, or list them in {words.allow_missing_in} "
            f"with a reason",
            unexplained[0],
        )


def _inconclusive(c: Comparison) -> str:
    what = {SPEEDUP_METRIC: "speedup", CYCLES_METRIC: "cycles"}.get(c.metric, "time")
    change = f"{c.case_id}: {what} {c.change_pct:+.2f}%" if c.change_pct is not None else f"{c.case_id}: {what}"
    if c.noise_pct is None:
        return (
            f"{change} is beyond {c.threshold_pct:.1f}%, but with no between-process noise to judge by it "
            "cannot fail the gate: run perfgate calibrate"
        )
    return (
        f"{change} is above the noise but a regression of {c.threshold_pct:.2f}% per process is neither shown "
        f"nor ruled out after {c.processes} process(es)"
    )


def _host_drift(run: Run, baseline: Baseline | None) -> Iterator[Finding]:
    """On the host clock the machine is part of the measurement: name the cases measured under clearly
    more load, a lower CPU clock or stolen CPU time than at calibration (one line per kind, worst first)."""
    if baseline is None:
        return
    drifts: dict[str, list[tuple[float, str]]] = {}
    for r in run.results:
        base = baseline.cases.get(r.case_id)
        if not r.timing.timer.on_host or base is None or base.host_state is None or r.host_state is None:
            continue
        for kind, size, text in host_changes(base.host_state, r.host_state):
            drifts.setdefault(kind, []).append((size, f"{r.case_id}: {text}"))
    for kind, items in sorted(drifts.items()):
        items.sort(reverse=True)
        more = f" (and {len(items) - 1} more case(s))" if len(items) > 1 else ""
        yield Finding(
            FindingKind.HOST_DRIFT,
            f"{items[0][1]}{more}: timings on the host clock include the "
            f"machine; a verdict may be the {kind}'s, not the code's",
        )


def host_changes(before: HostState, now: HostState) -> list[tuple[str, float, str]]:
    """(kind, size, description) of each clear change in the host's state."""
    out = []
    cpus = max(1, now.cpus)
    if now.load_avg_1m > max(2.0 * before.load_avg_1m, before.load_avg_1m + LOAD_RISE_PER_CPU * cpus):
        out.append(
            (
                "load",
                now.load_avg_1m - before.load_avg_1m,
                f"load average {now.load_avg_1m:.1f} now vs {before.load_avg_1m:.1f} at calibration on {cpus} CPU(s)",
            )
        )
    if now.cpu_mhz and before.cpu_mhz and now.cpu_mhz < (1 - CPU_CLOCK_DROP) * before.cpu_mhz:
        out.append(
            (
                "CPU clock",
                before.cpu_mhz - now.cpu_mhz,
                f"CPU clock {now.cpu_mhz:.0f} MHz now vs {before.cpu_mhz:.0f} MHz at calibration",
            )
        )
    if now.steal_pct is not None and now.steal_pct > STEAL_PCT + (before.steal_pct or 0.0):
        out.append(
            (
                "hypervisor",
                now.steal_pct,
                f"{now.steal_pct:.0f}% of CPU time stolen by the hypervisor "
                f"(calibration: {before.steal_pct or 0.0:.0f}%)",
            )
        )
    return out


def _why_nothing_measured(run: Run) -> str:
    """ "2 perf test(s) collected, none measured: 2 skipped (needs a CUDA GPU)": how the perf tests ended."""
    tests = run.info.unmeasured
    if not tests:
        return "no perf test ran (none collected, or every one deselected)"
    by_outcome = Counter(t.outcome.value for t in tests)
    reasons = Counter(t.reason for t in tests if t.reason)
    why = f" ({'; '.join(r for r, _ in reasons.most_common(2))})" if reasons else ""
    ended = ", ".join(f"{n} {outcome}" for outcome, n in by_outcome.most_common())
    return f"{len(tests)} perf test(s) collected, none measured: {ended}{why}"


def _run_level(run: Run, baseline: Baseline | None, facts: GateFacts) -> Iterator[Finding]:
    if not run.results:
        yield Finding(FindingKind.NO_CASES, _why_nothing_measured(run))
        return
    if baseline is None:
        where = facts.baseline_path or "the baseline directory"
        yield Finding(
            FindingKind.NO_BASELINE, f"no baseline for {run.environment.device_name} at {where}: nothing was compared"
        )
    elif not baseline.calibrated:
        yield Finding(
            FindingKind.UNCALIBRATED,
            f"baseline {baseline.path.name} is uncalibrated: run `perfgate "
            f"calibrate` for per-case thresholds from between-process noise",
        )
    host_cases = [r for r in run.results if r.timing.timer.on_host]
    if host_cases and facts.cuda_baselines:
        yield Finding(
            FindingKind.HOST_CLOCK,
            f"{len(host_cases)} case(s) timed with the host clock while CUDA baselines exist "
            f"({', '.join(facts.cuda_baselines)}): is the GPU visible?",
        )


def _unmeasured(
    run: Run, baseline: Baseline | None, allow_missing: Sequence[AllowedMissing], words: Against
) -> Iterator[Finding]:
    """A baseline case whose test was collected but skipped or errored (a skip `allow_missing` names is
    allowed, with its reason)."""
    if baseline is None or not run.info.unmeasured:
        return
    measured = {r.case_id for r in run.results}
    by_test = _cases_by_test(baseline.cases)
    for test in run.info.unmeasured:
        cases = [cid for cid in by_test.get(test.nodeid, ()) if cid not in measured]
        if not cases:
            continue
        kind = FindingKind.TEST_SKIPPED if test.outcome is TestOutcome.SKIPPED else FindingKind.TEST_ERRORED
        why = f": {test.reason}" if test.reason else ""
        entry = _allowed_by(cases[0], allow_missing)
        if kind is FindingKind.TEST_SKIPPED and entry is not None and all(_allowed_by(c, allow_missing) for c in cases):
            yield Finding(
                FindingKind.ALLOWED_MISSING,
                f"{test.nodeid} skipped{why}, allowed by allow_missing {entry.pattern!r}: {entry.reason}",
                case_id=cases[0],
            )
            continue
        yield Finding(
            kind,
            f"{test.nodeid} {test.outcome.value}{why} ({len(cases)} {words.noun} case(s) not measured)",
            case_id=cases[0],
        )


def _cases_by_test(case_ids: Iterable[str]) -> dict[str, list[str]]:
    """Baseline cases under each node id they may belong to: the id itself and every prefix ending before
    a `::` (a named case `test.py::test_x::bf16` belongs to `test.py::test_x`). One pass over the ids,
    instead of a scan of every baseline case per skipped test (quadratic at 10,000 cases)."""
    out: dict[str, list[str]] = {}
    for cid in case_ids:
        out.setdefault(cid, []).append(cid)
        end = cid.find("::")
        while end > 0:
            out.setdefault(cid[:end], []).append(cid)
            end = cid.find("::", end + 2)
    return out


def _shift(gate: GateResult, facts: GateFacts) -> Iterator[Finding]:
    """The run's common shift, when it has one: a strict finding, or a note when it comes and goes across the
    window's runs (no re-anchor can remove it) or was declared only at the level a changed environment allows."""
    if gate.common_shift is None or not gate.common_shift.named:
        return
    seen = comes_and_goes(gate.common_shift.shift_pct, facts.past_shifts_pct)
    beyond = [c.case_id for c in gate.comparisons if c.metric == TIME_METRIC and c.verdict is Verdict.REGRESSED]
    if seen:
        yield Finding(FindingKind.INTERMITTENT_SHIFT, intermittent_message(gate.common_shift, seen))
    elif not gate.common_shift.sure:
        yield Finding(
            FindingKind.STALE_BASELINE, "possible common-mode shift: " + shift_message(gate.common_shift, beyond)
        )
    else:
        yield Finding(FindingKind.COMMON_SHIFT, shift_message(gate.common_shift, beyond))


def _per_case(run: Run, baseline: Baseline | None, gate: GateResult, facts: GateFacts) -> Iterator[Finding]:
    yield from _shift(gate, facts)
    for c in gate.comparisons:
        if c.verdict is Verdict.NOT_COMPARABLE:
            yield Finding(FindingKind.NOT_COMPARABLE, f"{c.case_id}: {c.note}", c.case_id)
        elif c.verdict is Verdict.PROFILE_FAILED:
            yield Finding(FindingKind.PROFILE_FAILED, f"{c.case_id}: {c.note}", c.case_id)
        elif c.gated and c.metric in (TIME_METRIC, SPEEDUP_METRIC, CYCLES_METRIC) and c.verdict is Verdict.INCONCLUSIVE:
            yield Finding(FindingKind.INCONCLUSIVE, _inconclusive(c), c.case_id)
        elif c.gated and c.noise_pct is None and c.verdict is Verdict.REGRESSED and c.change_pct is not None:
            yield Finding(
                FindingKind.UNCALIBRATED,
                f"{c.case_id}: {c.change_pct:+.1f}%, slower by more than "
                f"{'its threshold' if c.threshold_pct is None else f'{c.threshold_pct:g}%'} in every process "
                f"({c.processes}): a gross regression fails even without between-process noise; run perfgate "
                "calibrate for thresholds from the noise (smaller changes cannot fail until then)",
                c.case_id,
            )
        elif (
            c.metric == TIME_METRIC
            and c.change_pct is not None
            and c.threshold_pct is not None
            and c.change_pct < -max(STALE_IMPROVEMENT_PCT, 3 * c.threshold_pct)
        ):
            yield Finding(
                FindingKind.STALE_BASELINE,
                f"{c.case_id}: {c.change_pct:+.1f}% faster than the baseline: "
                f"was it recorded cold, or before an intended change?",
                c.case_id,
            )
    for r in run.results:
        if r.gpu_state is not None and r.gpu_state.throttled_fraction >= THROTTLED_FRACTION:
            yield Finding(
                FindingKind.THROTTLED,
                f"{r.case_id}: sampled under a power/thermal cap "
                f"({100 * r.gpu_state.throttled_fraction:.0f}% of NVML polls, reasons "
                f"0x{r.gpu_state.throttle_reasons:x})",
                r.case_id,
            )
        base = baseline.cases.get(r.case_id) if baseline else None
        if base is not None and base.autotune and r.autotune and dict(base.autotune) != dict(r.autotune):
            changed = [
                f"{k}: {v} (baseline {dict(base.autotune).get(k, '-')})"
                for k, v in r.autotune
                if dict(base.autotune).get(k) != v
            ]
            yield Finding(
                FindingKind.AUTOTUNE_CHANGED,
                f"{r.case_id}: autotuner chose another config, a likely cause of a change: {'; '.join(changed)}",
                r.case_id,
            )
