"""Confirmation processes per gate run in scripts/replay_scenarios.py's scenarios (issue 31: what the run-wide
unseen-mode share, gate/mode_share.py, costs). Counts the fresh processes the replay's confirmer is asked for
(one per confirmation round: a round's fresh process measures all its suspects), on the same seeds as
replay_scenarios.py, and prints the mean per run with the scenario's failed unchanged runs.

    python lab/confirmation_cost.py --calibrations 20 --scenario "new mode (40% of processes +3%)"

Runs on whatever `perfgate` imports (PYTHONPATH=<a checkout of main> for main's numbers).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


def main(argv: list[str] | None = None) -> int:
    import replay_scenarios as rs  # scripts/, beside this checkout

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calibrations", type=int, default=20)
    p.add_argument("--scenario", action="append", required=True, choices=sorted(rs.SCENARIOS))
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    rounds = [0]
    held = [0]  # gated cases the run-wide mode share made inconclusive ("cannot fail: slower modes ...")
    plain = rs.run_gate

    def counted(request: Any) -> Any:
        inner = request.confirmer

        def confirmer(case_ids: Any) -> Any:
            rounds[0] += 1
            return inner(case_ids)

        out = plain(replace(request, confirmer=confirmer))
        held[0] += sum(c.gated and "cannot fail: slower modes" in c.note for c in out.gate.comparisons)
        return out

    rs.run_gate = counted
    for name in args.scenario:
        rounds[0] = held[0] = 0
        (row,) = rs.run([name], args.calibrations, args.calibrations, args.seed)
        runs = int(str(row["runs"]))
        print(
            f"{name}: {runs} runs, failed unchanged {row['failed_unchanged_runs']}, confirmation processes "
            f"{rounds[0]} ({rounds[0] / runs:.3f} per run); cases held inconclusive by the mode share {held[0]} "
            f"({held[0] / runs:.3f} per run)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
