"""An uncalibrated case run after run (issue 31, requirements 6 and 2): the shipped decision on simulated draws.

    python scripts/replay_uncalibrated.py [--seeds 200] [--runs 40] [--tests 1] [--sd 1,2,5] [--steps 10,20,50]

The first `pytest --perfgate` writes the baseline from one process; each later run is one process (and its
confirmation processes while it is a suspect), judged by gate/decision.py `decide` against that one process
with the noise of gate/noise.py `estimate_noise` over the noise window, as gate/run.py keeps it: failing runs
out, and per `--policy` the inconclusive runs:

- shipped: gate/window.py `judged_with_noise` (out only those judged with no between-process noise yet);
- keep: every inconclusive run in (main before this change: a step became its own noise);
- leave-out: every inconclusive run out (what a calibrated case's window does not do: store/verdicts.py).

Process medians are normal, `--sd` percent apart; the run's within-run samples (for the rank test of a case
without noise) lie 0.2% around its median. Per policy and sd it prints, for unchanged code, the mean exact
per-run false-alarm probability given each run's reference (P(a process beyond T)^k, and the gross rule's
P(beyond GROSS_PCT)^stages) over runs 1-N and N/4-N; and for a step of each `--steps` percent from run 1
and from run N/4 + 1, the share of later runs regressed, inconclusive and unchanged.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import NormalDist

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from perfgate.gate.decision import GROSS_PCT, Decision, Rule, decide, per_test_alpha  # noqa: E402
from perfgate.gate.noise import estimate_noise  # noqa: E402
from perfgate.gate.window import judged_with_noise  # noqa: E402
from perfgate.model import Verdict  # noqa: E402
from perfgate.store.window import PassingGateMedian  # noqa: E402

WINDOW = 30  # Settings.noise_window
FLOOR_PCT = 0.5  # a host timer's noise floor
THRESHOLD_PCT = 3.0  # an uncalibrated baseline's threshold_pct
MAX_PROCESSES = 8
Window = Callable[[Sequence[PassingGateMedian]], Sequence[PassingGateMedian]]

POLICIES: dict[str, Window] = {
    "shipped": lambda points: judged_with_noise(points, 1),
    "keep": lambda points: points,
    "leave-out": lambda points: [p for p in points if p.verdict is not Verdict.INCONCLUSIVE],
}


def one_case(seed: int, runs: int, sd_pct: float, step_pct: float, step_at: int, rule: Rule, window: Window):
    """Per run after the first: (verdict, exact false-alarm probability for unchanged code)."""
    rng = np.random.default_rng(seed)

    def process(level: float) -> float:
        return level * (1.0 + sd_pct / 100.0 * rng.standard_normal())

    def samples(median: float) -> list[float]:
        return list(median * (1.0 + 0.002 * rng.standard_normal(30)))

    base = process(1.0)
    base_samples = samples(base)
    history = [PassingGateMedian(0, "", "", base, None, verdict=Verdict.NEW)]  # newest first, as stored
    out = []
    for run in range(1, runs + 1):
        level = 1.0 + step_pct / 100.0 if run >= step_at else 1.0
        points = window(history[:WINDOW])  # as gate/run.py: the newest WINDOW runs read, then filtered
        noise = estimate_noise([base], [p.median_ms for p in points], FLOOR_PCT)
        current = [process(level)]
        run_samples = samples(current[0])
        d = decide([base], current, noise, rule, THRESHOLD_PCT, base_samples, run_samples)
        while d.suspect and len(current) < MAX_PROCESSES:
            current.append(process(level))
            d = decide([base], current, noise, rule, THRESHOLD_PCT, base_samples, run_samples)
        out.append((d.verdict, _exact(base, d, rule, sd_pct)))
        if d.verdict is not Verdict.REGRESSED:
            history.insert(0, PassingGateMedian(run, "", "", current[0], None, verdict=d.verdict))
    return out


def _exact(base: float, d: Decision, rule: Rule, sd_pct: float) -> float:
    """P(unchanged code fails this run) given its reference: every process beyond T (its stages), or beyond
    the gross threshold in the gross rule's stages."""

    def beyond(pct: float) -> float:
        return 1.0 - NormalDist().cdf((base * (1.0 + pct / 100.0) - 1.0) * 100.0 / sd_pct)

    gross = beyond(max(GROSS_PCT, THRESHOLD_PCT)) ** rule.stages
    return gross if d.noise is None else max(gross, beyond(d.threshold_pct) ** d.stages)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--tests", type=int, default=1, help="gated tests in the suite: alpha = 1%% / tests")
    ap.add_argument("--sd", default="1,2,5", help="between-process sd of the process medians, %%")
    ap.add_argument("--steps", default="10,20,50", help="slowdowns, %%")
    ap.add_argument("--policy", default="shipped,keep,leave-out")
    args = ap.parse_args(argv)
    rule = Rule(alpha=per_test_alpha(1.0, args.tests), stages=3)  # confirm_runs = 2
    late = args.runs // 4
    print(f"alpha {rule.alpha:.0e} per test, {args.seeds} seeds x {args.runs} runs, window {WINDOW}")
    for sd in (float(v) for v in args.sd.split(",")):
        for name in args.policy.split(","):
            window = POLICIES[name]
            rates = np.array(
                [[e for _, e in one_case(s, args.runs, sd, 0.0, 1, rule, window)] for s in range(args.seeds)]
            )
            tail = rates[:, late:].mean()
            print(
                f"sd {sd:g}% {name:9s} unchanged: false alarms {rates.mean():.2e} per run (runs 1-{args.runs}), "
                f"{tail:.2e} (runs {late + 1}-{args.runs}) = {tail / rule.alpha:.2f}x alpha"
            )
            for step in (float(v) for v in args.steps.split(",")):
                for at in (1, late + 1):
                    seen = Counter(
                        v.value
                        for s in range(args.seeds)
                        for v, _ in one_case(s, args.runs, sd, step, at, rule, window)[at:]
                    )
                    total = sum(seen.values())
                    shares = ", ".join(
                        f"{k} {100 * seen[k] / total:.0f}%" for k in ("regressed", "inconclusive", "unchanged")
                    )
                    print(f"    +{step:g}% from run {at}: later runs {shares}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
