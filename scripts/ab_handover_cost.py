"""What one hand-over of the shared A/B host costs (perfgate/ab/host/): a side taking the baton and giving
it back, with the contract on (the handed-over state read and put back, the fingerprint taken twice), in a
process that has imported torch and NumPy, as a host of a torch project has.

    python scripts/ab_handover_cost.py [--turns 100]

Prints the best of five batches in ms per turn. A round of A/B mode is one turn per side.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfgate.ab.host import baton as host  # noqa: E402
from perfgate.ab.host import environ  # noqa: E402
from perfgate.ab.host.handover import Registry  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=100)
    args = p.parse_args()
    for name in ("numpy", "torch"):
        importlib.import_module(name)
    tmp = Path(tempfile.mkdtemp(prefix="perfgate-handover-"))
    ended: list[str] = []
    contract = host.Contract(Registry(), ended.append, lambda: frozenset({threading.get_ident()}))
    baton = host.Baton(frozenset(sys.modules), contract=contract)
    sides = []
    for side in ("base", "head"):
        (tmp / side).mkdir()
        boot = host.SideBoot(side, str(tmp / side), str(tmp / side), {"X": side}, str(tmp / f"{side}.log"), [], -1)
        sides.append(host.SideState(boot, baton, list(sys.path), environ.python_view()))
    baton.sides = tuple(sides)
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for i in range(args.turns):
            with baton.holding(sides[i % 2]):
                pass
        best = min(best, (time.perf_counter() - started) / args.turns * 1e3)
    print(
        f"ab-handover: {best:.2f} ms per turn (take + give, best of 5 x {args.turns}); {len(sys.modules)} modules, "
        f"{len(contract.registry.items)} handed-over items; contract ended: {ended or 'never'}"
    )


if __name__ == "__main__":
    main()
