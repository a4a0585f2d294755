"""A/B mode's false alarms and power, on the shipped decision functions, over seeded whole runs (docs/ab.md).

    python scripts/ab_rates.py [--runs 600] [--cases-per-kind 1000] [--power-runs 40] [--seed 0]

The runs are tests/ab_simulation.py's: per case the rounds the coordinator measures (base, head and the A/A
twin, more stages while perfgate.ab.pairs.screen asks), the verdict of perfgate.ab.ratios.judge_case (a call
measured again by a fresh pair of processes), the noise as docs/evidence/ab-noise.md measured it on the H100
(separate processes: offsets of 1-3% on a 12 us add, 0.1-0.4% on long kernels; one shared process: next to
none), Student's t rounds and wild rounds as stresses. Prints four Markdown tables:

1. per run: unchanged runs of 10 and 100 cases that failed, at the shipped budget (1%) and floor (1%);
2. per comparison, without the floor: how often each kind is called regressed at alpha 0.1% and 1%;
3. power: each kind's share caught per injected slowdown (10-case runs, shipped settings), and the median
   of what its cases report they detect;
4. "detects": each kind slowed by 0.8-1.25x what its cases report they detect; the cases whose change was
   within 10% below or above their own report, and how many were caught (80% at the detects is the
   definition; at the 1% floor the step is sharp: 1.0x the floor is not beyond it).

Upper bounds are Clopper-Pearson 95% (scipy). A full run takes ~10-20 minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.ab_simulation import SEPARATE, SHARED, Suite, runs  # noqa: E402

EFFECTS_PCT = (1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0)


def upper(failures: int, trials: int) -> float:
    """The one-sided 95% Clopper-Pearson upper bound of a rate, in %."""
    return 100.0 * (1.0 if failures >= trials else float(stats.beta.ppf(0.95, failures + 1, trials - failures)))


def per_run(count: int, seed: int) -> list[str]:
    lines = [
        "| process mode | cases per run | noise | unchanged runs | failed | rate | 95% bound | fresh pairs / run |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    variants = (
        ("as measured", {}),
        ("t(3) rounds, 5% wild", {"t3": True, "wild": 0.05}),
        ("offsets x2", {"offset_scale": 2.0}),
    )
    for shared in (True, False):
        for cases, n in ((10, count), (100, max(20, count // 10))):
            for name, kw in variants:
                if cases == 100 and kw:
                    continue  # the stresses on 10-case runs only: their cost is the 100-case runs'
                suite = Suite(SHARED if shared else SEPARATE, cases, shared, **kw)  # type: ignore[arg-type]
                outcomes = list(runs(suite, n, seed=seed + cases))
                failed = sum(o.failed for o in outcomes)
                fresh = sum(o.fresh_pairs for o in outcomes) / n
                lines.append(
                    f"| {'shared' if shared else 'separate'} | {cases} | {name} | {n} | {failed} | "
                    f"{100 * failed / n:.2f}% | {upper(failed, n):.2f}% | {fresh:.2f} |"
                )
                print(lines[-1], flush=True)
    return lines


def per_comparison(count: int, seed: int) -> list[str]:
    lines = [
        "| process mode | kind | comparisons | called at alpha 0.1% | rate | called at alpha 1% | rate |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for shared in (True, False):
        for kind in SHARED if shared else SEPARATE:
            cells = []
            for budget in (1.0, 10.0):  # over 10 comparisons: alpha 0.1% and 1%
                suite = Suite((kind,), 10, shared)
                n_runs = max(1, count // 10)
                called = sum(
                    v.value == "regressed"
                    for o in runs(suite, n_runs, seed=seed + int(budget), budget_pct=budget, min_effect_pct=0.0)
                    for _, v, _ in o.verdicts
                )
                cells.append((called, n_runs * 10))
            (a, n), (b, _) = cells
            lines.append(
                f"| {'shared' if shared else 'separate'} | {kind.name} | {n} | {a} | {100 * a / n:.2f}% | {b} | "
                f"{100 * b / n:.2f}% |"
            )
            print(lines[-1], flush=True)
    return lines


def power(count: int, seed: int) -> tuple[list[str], dict[tuple[bool, str], float]]:
    head = " | ".join(f"{e:g}%" for e in EFFECTS_PCT)
    lines = [
        f"| process mode | kind | {head} | detects (median) |",
        "|---|---|" + "---:|" * (len(EFFECTS_PCT) + 1),
    ]
    medians: dict[tuple[bool, str], float] = {}
    for shared in (True, False):
        kinds = SHARED if shared else SEPARATE
        caught: dict[tuple[str, float], list[bool]] = defaultdict(list)
        detects: dict[str, list[float]] = defaultdict(list)
        for effect in EFFECTS_PCT:
            suite = Suite(kinds, 10, shared)
            for o in runs(suite, count, seed=seed + int(10 * effect), change=math.log1p(effect / 100)):
                for kind, v, d in o.verdicts:
                    caught[(kind, effect)].append(v.value == "regressed")
                    detects[kind].append(math.inf if d is None or d.detects_pct is None else d.detects_pct)
        for kind in dict.fromkeys(k.name for k in kinds):
            cells = " | ".join(f"{100 * sum(caught[(kind, e)]) / len(caught[(kind, e)]):.0f}%" for e in EFFECTS_PCT)
            medians[(shared, kind)] = statistics.median(detects[kind])
            lines.append(
                f"| {'shared' if shared else 'separate'} | {kind} | {cells} | {medians[(shared, kind)]:.2f}% |"
            )
            print(lines[-1], flush=True)
    return lines, medians


def calibration(count: int, seed: int, medians: dict[tuple[bool, str], float]) -> list[str]:
    """Each kind alone (10-case runs), slowed by 0.8-1.25x the median of what its cases reported they detect;
    every case scored against its own report (detects is estimated from the case's own rounds and draws):
    the cases injected within 10% below or above it, and how many of them were caught."""
    lines = [
        "| process mode | kind | injected 0.9-1x its detects: caught | 1-1.1x: caught | all within 10%: caught |",
        "|---|---|---:|---:|---:|",
    ]
    for shared in (True, False):
        for kind in SHARED if shared else SEPARATE:
            centre = medians[(shared, kind.name)]
            below: list[bool] = []
            above: list[bool] = []
            for i, scale in enumerate((0.8, 0.9, 1.0, 1.1, 1.25)):
                effect = centre * scale
                for o in runs(Suite((kind,), 10, shared), count, seed=seed + 7 * i, change=math.log1p(effect / 100)):
                    for _, v, d in o.verdicts:
                        if d is not None and d.detects_pct and 0.9 <= effect / d.detects_pct <= 1.1:
                            (above if effect >= d.detects_pct else below).append(v.value == "regressed")
            both = below + above
            cells = [f"{sum(c)}/{len(c)} ({100 * sum(c) / len(c):.0f}%)" if c else "-" for c in (below, above, both)]
            lines.append(f"| {'shared' if shared else 'separate'} | {kind.name} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=600, help="unchanged 10-case runs per row (100-case: a tenth)")
    parser.add_argument("--cases-per-kind", type=int, default=1000, help="comparisons per kind and alpha")
    parser.add_argument("--power-runs", type=int, default=40, help="10-case runs per injected slowdown")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.monotonic()
    sections = [
        ("Unchanged runs that failed (budget 1%, floor 1%)", per_run(args.runs, args.seed)),
        ("Comparisons called regressed, no floor", per_comparison(args.cases_per_kind, args.seed)),
    ]
    caught, medians = power(args.power_runs, args.seed)
    sections += [("Caught per injected slowdown (10-case runs, shipped settings)", caught)]
    calibrated = calibration(max(1, args.power_runs // 4), args.seed, medians)
    sections += [("Cases injected within 10% of what they reported they detect (80% is the definition)", calibrated)]
    print()
    for title, lines in sections:
        print(f"ab-rates: {title}")
        print("\n".join(lines))
        print()
    print(f"ab-rates: {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
