"""How often the common-mode test declares a shift of every case of the drift row's mix (issue 31), for the
weighted sign-flip test the gate uses and the unweighted signed-rank test it replaced: one run's first process
per case ranked among its 10 calibration processes.

    python lab/drift_power.py [--runs 600] [--seed 5]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from perfgate.gate.common import SIGN_P, centred_rank, signed_rank_p, weighted_sign_p

QUIET, SMALL, GEMM = (0.3, 0.0, 0.0), (1.5, 0.0, 0.0), (0.8, 0.3, 4.0)  # sd %, slow mode's share, its gap %
MIX = [QUIET, SMALL, GEMM, QUIET, SMALL, QUIET, GEMM, QUIET, SMALL, QUIET]  # replay_scenarios.py's MIX


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=600)
    p.add_argument("--seed", type=int, default=5)
    args = p.parse_args()
    rng = np.random.default_rng(args.seed)

    def draw(sd: float, share: float, gap: float, n: int) -> np.ndarray:
        return 1 + (sd * rng.standard_normal(n) + (rng.random(n) < share) * gap) / 100

    for drift in (0.0, 0.3, 0.5, 0.7, 1.0):
        unweighted = weighted = 0
        for _ in range(args.runs):
            ranks, scores = [], []
            for sd, share, gap in MIX:
                cal = draw(sd, share, gap, 10)
                now = float(draw(sd, share, gap, 1)[0]) * (1 + drift / 100)
                r = centred_rank(now, [float(v) for v in cal])
                unit = 100 * float(np.std(cal, ddof=1) / np.mean(cal)) * np.sqrt(1.1)
                ranks.append(r)
                scores.append(r / unit)
            unweighted += signed_rank_p(ranks) <= SIGN_P
            weighted += weighted_sign_p(scores) <= SIGN_P
        print(
            f"drift {drift:.1f}%: declared unweighted {unweighted / args.runs:.3f}, weighted {weighted / args.runs:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
