"""Replay the pooled offset prior on recorded unchanged A/B runs (docs/ab.md, "The offsets' variance pooled").

    python lab/ab_pooled_replay.py DIR [DIR ...]

DIR holds `scripts/ab_host_cost.py --aa-runs R --out DIR` JSONs. Per run, each case's first-pair mean log
ratio is its offset draw (base and head hold the same code); prints, for limma's moment estimate of d0 and
for the shipped one (perfgate.gate.pooled.offset_prior), the runs' d0 and the runs in which a case's
moderated t on its one draw would pass t(1 - 1e-4) at d0 + 1 dof: a crude check (no fresh pair).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy import optimize, special, stats

from perfgate.gate.pooled import offset_prior


def limma(x: np.ndarray) -> tuple[float, float]:
    e = np.log(x) - special.digamma(0.5) + np.log(0.5)
    excess = e.var(ddof=1) - special.polygamma(1, 0.5)
    if excess <= 0:
        return np.inf, float(np.exp(e.mean()))
    d0 = 2 * optimize.brentq(lambda y: special.polygamma(1, y) - excess, 1e-6, 1e8)
    return d0, float(np.exp(e.mean() + special.digamma(d0 / 2) - np.log(d0 / 2)))


def calls(m: np.ndarray, d0: float, s0: float) -> int:
    d0 = min(d0, 1e6)
    return int((np.abs(m) / np.sqrt((d0 * s0 + m**2) / (d0 + 1)) > stats.t.ppf(1 - 1e-4, d0 + 1)).sum())


def main() -> None:
    rows = []
    for path in sorted(p for d in sys.argv[1:] for p in Path(d).glob("*.json")):
        cases = json.loads(path.read_text())["ab"]["cases"]
        m = np.array([np.log(np.divide(c["median_ms"]["head"], c["median_ms"]["base"])).mean() for c in cases])
        shipped = offset_prior(list(m))
        d0, s0 = limma(m**2)
        rows.append(
            (
                d0,
                calls(m, d0, s0),
                shipped.dof if shipped else 0,
                calls(m, shipped.dof, shipped.var_log) if shipped else 0,
            )
        )
    a = np.array(rows)
    print(f"runs {len(a)}: limma d0 inf in {int(np.isinf(a[:, 0]).sum())}, runs with a call {int((a[:, 1] > 0).sum())}")
    print(f"shipped d0 {sorted(int(v) for v in a[:, 2])}, runs with a call {int((a[:, 3] > 0).sum())}")


if __name__ == "__main__":
    main()
