"""The first gate run after a calibration, replayed fast: the shipped decision rule on the replay's own draws.

    python scripts/replay_first_run.py --scenario NAME [--calibrations 5000] [--first 0] [--seed 1]
                                       [--check N] [--json OUT]

scripts/replay_scenarios.py gates each first run through `run_gate` (a baseline file written and read back,
the noise resolved, confirmation rounds, findings, outputs): ~1.3 s per calibration at 1,000 cases on an idle
core, so 400 calibrations bound a rate near 0.4% only to 0.1-1.8%. This replays the same thing at the
decision: for calibration c it draws from a `Replica` seeded as replay_scenarios.py seeds calibration c (so
the very same process values, in the same order), takes each case's noise (gate/noise.py `estimate_noise`),
the run's common-mode shift (gate/common.py) and its verdict (gate/decision.py `decide`), and measures every
suspect again in a fresh process per round (what gate/confirm.py does: the suspects in case order, up to
MAX_STAGES processes) until no case is suspect.

`--check N` runs the first N calibrations both ways, this path and `run_gate`, and prints whether every
case's time verdict agreed (the rate is then this path's; the check says it is run_gate's too). The seeds
match `python scripts/replay_scenarios.py --scenario NAME` (one scenario asked for).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from replay_scenarios import SCENARIOS, Replica, _Silence, calibration_processes, wilson  # noqa: E402

from perfgate.config.settings import Settings  # noqa: E402
from perfgate.gate.common import centred_rank, common_shift  # noqa: E402
from perfgate.gate.decision import MAX_STAGES, Decision, Rule, decide, per_test_alpha  # noqa: E402
from perfgate.gate.noise import DEFAULT_NOISE_FLOOR_PCT, estimate_noise  # noqa: E402
from perfgate.metrics import TIME_METRIC  # noqa: E402
from perfgate.model import CommonShift, NoiseEstimate, Timer, Verdict  # noqa: E402

FLOOR_PCT = DEFAULT_NOISE_FLOOR_PCT[Timer.CUDA_EVENT]  # replay_scenarios.py times with CUDA events


@dataclass(frozen=True)
class FirstRun:
    verdicts: tuple[Verdict, ...]  # per case, its time verdict
    rounds: int  # confirmation rounds measured
    shift_pct: float | None  # the run's common-mode shift, when one was declared (the centres moved)
    named: bool = False  # and a finding names it (half the floor or more: gate/common.py)

    @property
    def failed(self) -> bool:
        return Verdict.REGRESSED in self.verdicts


def seed_of(seed: int, calibration: int) -> int:
    """replay_scenarios.py's seed of calibration `calibration` when one scenario is asked for."""
    return seed * 100_003 + calibration


def stored(value_ms: float) -> float:
    """A calibration value as the baseline file keeps it (baseline/write.py: six significant digits), which is
    what run_gate reads back: a change of at most 5e-6 of the value, 0.002 noise units of the quietest case."""
    return float(f"{value_ms:.6g}")


def decision_path(rep: Replica, settings: Settings) -> FirstRun:
    """Calibrate and gate run 1 on `rep`'s draws, at the decision (see the module's docstring)."""
    cases = range(len(rep.ids))
    calibration: list[list[float]] = [[] for _ in cases]
    for _ in range(rep.processes):  # Replica.calibrate: one process after the other, each over every case
        state = rep.process_state(0)
        for i in cases:
            calibration[i].append(stored(rep.value(i, 0, state)))
    state = rep.process_state(1)  # Replica.gate: the run's process
    current = [[rep.value(i, 1, state)] for i in cases]
    noises = [estimate_noise(cal, (), FLOOR_PCT) for cal in calibration]
    shift = _shift(calibration, current, noises, settings, rep)
    rule = Rule(
        alpha=per_test_alpha(settings.false_alarm_pct, len(rep.ids)),
        stages=1 + settings.confirm_runs,
        floor_pct=settings.min_effect_pct,
        max_stages=MAX_STAGES,
    )

    decided = [_decide(calibration[i], current[i], noises[i], rule, shift) for i in cases]
    rounds = 0
    while rounds < MAX_STAGES - 1 and any(d.suspect for d in decided):
        rounds += 1
        state = rep.process_state(1)  # one fresh process measures every suspect of the round, in case order
        for i in [i for i in cases if decided[i].suspect]:  # only their inputs change: only they are decided again
            current[i].append(rep.value(i, 1, state))
            decided[i] = _decide(calibration[i], current[i], noises[i], rule, shift)
    named = shift is not None and shift.named
    return FirstRun(tuple(d.verdict for d in decided), rounds, None if shift is None else shift.shift_pct, named)


def _decide(
    cal: list[float], now: list[float], noise: NoiseEstimate | None, rule: Rule, shift: CommonShift | None
) -> Decision:
    return decide(
        cal,
        now,
        noise,
        rule,
        shift_pct=0.0 if shift is None else shift.shift_pct,
        shift_variance=0.0 if shift is None else shift.variance_share,
    )


def _shift(
    calibration: Sequence[Sequence[float]],
    current: Sequence[Sequence[float]],
    noises: Sequence[NoiseEstimate | None],
    settings: Settings,
    rep: Replica,
) -> CommonShift | None:
    """gate/compare.py `run_shift`: over the cases' first processes, each change in units of its noise."""
    changes: dict[str, tuple[float, float]] = {}
    ranks: dict[str, float] = {}
    for cid, cal, now, noise in zip(rep.ids, calibration, current, noises, strict=True):
        if noise is not None:
            centre = sum(cal) / len(cal)  # as run_shift sums them, to the last bit
            unit = noise.noise_pct * math.sqrt(1.0 + 1.0 / len(cal))
            changes[cid] = (100.0 * (now[0] - statistics.median(cal)) / centre, unit)
            ranks[cid] = centred_rank(now[0], cal)
    return common_shift(changes, settings.min_effect_pct, rep.s.env(0), rep.s.env(1), ranks)


def gate_path(rep: Replica) -> FirstRun:
    """The same calibration through replay_scenarios.py: calibrated_baseline, write_baseline and `run_gate`."""
    rep.calibrate()
    with _Silence():
        out = rep.gate(1)
    by_case: Mapping[str, Verdict] = {
        c.case_id: c.verdict for c in out.gate.comparisons if c.metric == TIME_METRIC and c.case_id in rep.ids
    }
    rounds = max((len(r.confirmation_medians_ms) for r in out.run.results), default=0)
    shift = out.gate.common_shift
    pct, named = (None, False) if shift is None else (shift.shift_pct, shift.named)
    return FirstRun(tuple(by_case[c] for c in rep.ids), rounds, pct, named)


def exact_rate(name: str, calibrations: int, seed: int) -> tuple[float, float]:
    """The scenario's first-run rate per case computed, not sampled, and its standard error (normal or two-mode
    noise, every case alike): given a calibration, a case fails when all k fresh processes lie beyond T, each
    with the mixture's survival probability q at T, so with q^k (tests/test_calibrate_sizing.py, more draws)."""
    from statistics import NormalDist

    import numpy as np

    scenario = SCENARIOS[name]
    noise, cases = scenario.noises[0], len(scenario.noises)
    if noise.tail_df or any(n != noise for n in scenario.noises) or scenario.process_state_share:
        raise SystemExit(f"replay_first_run: no exact rate for {name!r} (one normal or two-mode noise only)")
    fast, slow = NormalDist(0.0, noise.sd_pct), NormalDist(noise.mode_gap_pct, noise.sd_pct)
    n, rng, settings = calibration_processes(scenario, None), np.random.default_rng(seed), Settings()
    rule = Rule(per_test_alpha(settings.false_alarm_pct, cases), 1 + settings.confirm_runs, settings.min_effect_pct)
    rates = np.empty(calibrations)
    for c in range(calibrations):
        cal = list(noise.draw(rng, n))
        d = decide(cal, [1.0], estimate_noise(cal, (), FLOOR_PCT), rule)
        raw = 100.0 * ((1.0 + d.threshold_pct / 100.0) * sum(cal) / n - 1.0)  # T as a deviation from 1
        q = (1 - noise.mode_share) * (1 - fast.cdf(raw)) + noise.mode_share * (1 - slow.cdf(raw))
        rates[c] = q**d.stages
    return float(rates.mean()), float(rates.std(ddof=1) / math.sqrt(calibrations))


def replay(name: str, first: int, calibrations: int, seed: int, check: int) -> dict[str, object]:
    scenario = SCENARIOS[name]
    if not scenario.first_run_only:
        raise SystemExit(f"replay_first_run: {name!r} is not a first-run scenario")
    processes = calibration_processes(scenario, None)
    settings = Settings()
    failed, agreed, shifted, failing = 0, 0, 0, []
    started = time.monotonic()
    for c in range(first, first + calibrations):
        with tempfile.TemporaryDirectory(prefix="perfgate-first-run-") as tmp:
            fast = decision_path(Replica(scenario, seed_of(seed, c), Path(tmp), processes), settings)
            if c < first + check:
                full = gate_path(Replica(scenario, seed_of(seed, c), Path(tmp), processes))
                agreed += full == fast
                if full != fast:
                    print(f"calibration {c}: run_gate and the decision path disagree: {full} / {fast}", flush=True)
        failed += fast.failed
        shifted += fast.named
        if fast.failed:
            failing.append(c)
    lo, hi = wilson(failed, calibrations)
    return {
        "scenario": name,
        "calibration_processes": processes,
        "calibrations": calibrations,
        "first_calibration": first,
        "failed_unchanged_runs": failed,
        "failed_unchanged_pct": 100.0 * failed / calibrations,
        "failed_unchanged_ci_pct": (100.0 * lo, 100.0 * hi),
        "failing_calibrations": failing,
        "common_shift_runs": shifted,  # a common-mode finding: strict mode fails the run on it
        "checked_against_run_gate": min(check, calibrations),
        "agreed_with_run_gate": agreed,
        "seconds": round(time.monotonic() - started),
    }


def render(r: Mapping[str, object]) -> str:
    lo, hi = r["failed_unchanged_ci_pct"]  # type: ignore[misc]
    line = (
        f"{r['scenario']}: {r['calibrations']} calibrations x {r['calibration_processes']} processes "
        f"(from {r['first_calibration']}): failed unchanged {r['failed_unchanged_runs']} "
        f"({r['failed_unchanged_pct']:.2f}%, 95% {lo:.2f}-{hi:.2f}%) at calibrations {r['failing_calibrations']}"
    )
    line += f"\n    a common-mode shift named in {r['common_shift_runs']} of them (strict mode fails on it)"
    if r["checked_against_run_gate"]:
        line += (
            f"\n    run_gate gave every case the same time verdict, the same confirmation rounds and shift in "
            f"{r['agreed_with_run_gate']} of {r['checked_against_run_gate']} calibrations"
        )
    return line + f"\n    ({r['seconds']} s)"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    first_run = sorted(n for n, s in SCENARIOS.items() if s.first_run_only)
    p.add_argument("--scenario", required=True, choices=first_run)
    p.add_argument("--calibrations", type=int, default=5000)
    p.add_argument("--first", type=int, default=0, help="the first calibration's index (replay_scenarios.py's)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--check", type=int, default=0, help="also gate the first N calibrations through run_gate")
    p.add_argument("--json", type=Path, help="write the row here")
    p.add_argument("--exact", type=int, default=0, help="instead: the exact rate over this many calibrations")
    args = p.parse_args(argv)
    if args.exact:
        rate, se = exact_rate(args.scenario, args.exact, args.seed)
        cases = len(SCENARIOS[args.scenario].noises)
        print(
            f"{args.scenario}: exact first-run rate {rate:.3g} per case (standard error {se:.2g}) over "
            f"{args.exact} calibrations: {100 * -math.expm1(cases * math.log1p(-rate)):.3f}% per run"
        )
        return 0
    row = replay(args.scenario, args.first, args.calibrations, args.seed, args.check)
    print(render(row))
    if args.json:
        args.json.write_text(json.dumps(row, indent=1))
    return 0 if row["agreed_with_run_gate"] == row["checked_against_run_gate"] else 1


if __name__ == "__main__":
    sys.exit(main())
