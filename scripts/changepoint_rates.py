"""False steps on stationary noise and steps found, for perfgate's change points (docs/history.md).

    python scripts/changepoint_rates.py [--series 20000]

Seeded series of 40 runs (and short ones, 10-20 runs): Gaussian noise (0.5%) and bimodal processes (a
third of them 2% slower), with the test alone (no minimum step) and with the default 1% minimum; then
steps of 1-5% after 20 runs with 5, 8 and 12 runs after them; a temporary 40% slowdown of 10 runs in 40, at
every position.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfgate.trends.changepoints import ChangePointSettings, find_steps  # noqa: E402
from tests.test_changepoints import bimodal, gaussian  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=20000)
    args = parser.parse_args()
    print("| noise | runs | minimum step | series | series with a false step | rate |")
    print("|---|---:|---:|---:|---:|---:|")
    for runs in (40, 10, 13, 16, 20):  # short series: where the t-test stands in for the permutations
        for name, make in (("gaussian 0.5%", gaussian), ("bimodal (1/3 at +2%)", bimodal)):
            for min_pct in (0.0, 1.0):
                settings = ChangePointSettings(min_change_pct=min_pct)
                false = sum(bool(find_steps(make(seed, runs), settings)) for seed in range(args.series))
                rate = 100 * false / args.series
                print(f"| {name} | {runs} | {min_pct:g}% | {args.series} | {false} | {rate:.3f}% |")
    print()
    print("| step | runs after | found at the step (+/- 1 run), gaussian 0.5% noise, 1,000 seeds |")
    print("|---:|---:|---:|")
    for size in (1.0, 1.5, 2.0, 3.0, 5.0):
        for after in (5, 8, 12):
            found = 0
            for seed in range(1000):
                x = 1.0 + 0.005 * np.random.default_rng(seed).standard_normal(20 + after)
                x[20:] *= 1 + size / 100
                found += [abs(s.index - 20) <= 1 for s in find_steps(x)] == [True]
            print(f"| {size:g}% | {after} | {found / 10:.1f}% |")
    print()
    print("| 40% slowdown lasting 10 runs of 40, then fixed (1% noise) | both ends found, 100 seeds |")
    print("|---|---:|")
    for start in (0, 4, 8, 12, 15, 18, 22, 26, 30):
        both = 0
        for seed in range(100):
            x = 1.0 + 0.01 * np.random.default_rng(seed).standard_normal(40)
            x[start : start + 10] *= 1.4
            at = [s.index for s in find_steps(x)]
            both += all(any(abs(i - w) <= 1 for i in at) for w in (start, start + 10) if 0 < w < 40)
        print(f"| runs {start}-{start + 9} | {both}% |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
