"""Compare a single-GPU gate with a `-n N` gate of the same suite (issue 10's 2-GPU check).

    python lab/gpu/xdist_check.py single.json xdist.json

Prints each case's verdict in both runs and the GPU each case ran on under -n, then exits 1 unless
every verdict agrees and the -n run used as many distinct GPUs as it had workers (at least two).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def verdicts(doc: dict[str, object]) -> dict[str, str]:
    rows = doc["comparisons"]
    assert isinstance(rows, list)
    return {r["case_id"]: r["verdict"] for r in rows if r["metric"] == "median_ms"}


def main(single_path: str, xdist_path: str) -> int:
    single = json.loads(Path(single_path).read_text())
    xdist = json.loads(Path(xdist_path).read_text())
    one, many = verdicts(single), verdicts(xdist)
    gpus = {c["case_id"]: c["device_uuid"] for c in xdist["cases"]}
    print(f"{'case':58} {'single':>10} {'-n':>10}  gpu")
    for case in sorted(one.keys() | many.keys()):
        print(f"{case:58} {one.get(case, '-'):>10} {many.get(case, '-'):>10}  {gpus.get(case, '-')[-12:]}")
    distinct = set(gpus.values())
    same = one == many
    print(f"\nverdicts equal: {same}; GPUs used under -n: {len(distinct)} ({', '.join(sorted(distinct))})")
    print(f"single-GPU cases on: {sorted({c['device_uuid'] for c in single['cases']})}")
    return 0 if same and len(distinct) >= 2 else 1


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
