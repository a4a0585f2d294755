"""What scrubbing a gate for publication costs at scale (docs/robustness.md, "Safe to publish").

    python scripts/bench_scrub.py [--cases 10000] [--repeat 3]

A synthetic gate of N cases (tests/scale.py: 1% regressed, 25% inconclusive) scrubbed as `publish` does
(Scrubber.gate and Scrubber.run, one secret value from the environment); prints the best CPU seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfgate.report.scrub import Scrubber  # noqa: E402
from tests.scale import scale_gate  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    gate, run = scale_gate(args.cases, args.cases // 100, args.cases // 4)
    times = []
    for _ in range(args.repeat):
        scrubber = Scrubber(None, secret_values=["hunter2-correct-horse-battery"])
        started = time.process_time()
        scrubber.gate(gate)
        scrubber.run(run)
        times.append(time.process_time() - started)
    print(f"{args.cases:,} cases: gate and run scrubbed in {min(times):.2f} CPU s (best of {args.repeat})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
