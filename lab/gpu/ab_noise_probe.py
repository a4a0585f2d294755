"""Where A/B mode's ratio noise comes from, on the H100: A/A runs (the head is the base's code) of the five
accuracy cases, two slots each, with the round trace (`ab.cases` of the JSON results) kept, under
round lengths of 40 ms (30 rounds) and 10 ms (40 rounds). Every run measures its A/A twin afresh.

    python lab/gpu/ab_noise_probe.py [--variants 40:30,10:40] [--budget-s 300]

The traces ($OUT/ab_noise_probe.tgz) are studied offline (scripts in lab/, docs/evidence/ab-noise.md):
per-round noise, the order a round's sides ran in, process offsets (base against its twin).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ab_lab import ROOT, SCRATCH_ROOT, check_tools, commit, env_with, git, head, log, new_project, perfgate_ab

NAMES = ("cublas_matmul", "triton_matmul", "small_add", "copy", "attention")
SLOTS = ("0", "1")
SCRATCH = SCRATCH_ROOT / "noise"
TEST = "ab_cases/test_ab_accuracy.py"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", default="40:30,10:40", help="round_ms:rounds, comma-separated")
    p.add_argument("--budget-s", type=float, default=300.0, help="start no new run after this many seconds")
    p.add_argument("--host", action="store_true", help="host-clock cases: try the plumbing without a GPU")
    p.add_argument("--names", default=",".join(NAMES), help="cases, comma-separated")
    p.add_argument("--no-flush", action="store_true", help="both trees without the L2 flush (flush_l2 = false)")
    p.add_argument("--seeds", default="", help="perfgate ab --seed per run, comma-separated (odd: base starts first)")
    args = p.parse_args()
    check_tools(gpu=not args.host)
    names = ("json_encode", "sort") if args.host else tuple(args.names.split(","))
    started = time.monotonic()
    here = Path(__file__).parent / "ab_cases"
    repo = new_project(
        SCRATCH / "repo",
        {
            TEST: (here / "test_ab_accuracy.py").read_text(),
            "ab_cases/accuracy_cases.py": (ROOT / "scripts" / "accuracy" / "test_accuracy_cases.py").read_text(),
            "ab_cases/slots.json": json.dumps(SLOTS),
            "ab_cases/names.json": json.dumps(names),
            "ab_cases/inject.json": "{}",
        },
    )
    if args.no_flush:
        text = (repo / "pyproject.toml").read_text().replace("flush_l2 = true", "flush_l2 = false")
        commit(repo, "no L2 flush", {"pyproject.toml": text})
    base = head(repo)
    env = env_with(TRITON_CACHE_DIR=str(SCRATCH / "triton-head"), PERFGATE_KERNEL_CACHE=str(SCRATCH / "kernels"))
    worktrees = SCRATCH / "worktrees"
    shutil.rmtree(worktrees, ignore_errors=True)
    pyproject = (repo / "pyproject.toml").read_text()
    seeds = args.seeds.split(",") if args.seeds else []
    for i, variant in enumerate(args.variants.split(",")):
        if time.monotonic() - started > args.budget_s:
            log(f"ab-noise: budget spent after {i} run(s)")
            break
        round_ms, rounds = (int(x) for x in variant.split(":"))
        text = re.sub(r"(?m)^budget_ms = .*$", f"budget_ms = {round_ms * rounds}.0", pyproject)
        git(repo, "checkout", "-q", "main")
        commit(repo, f"aa: rounds of {round_ms} ms", {"pyproject.toml": text})
        for stale in worktrees.rglob("aa.json"):
            stale.unlink()  # every run measures its own A/A twin
        code, wall, doc = perfgate_ab(
            f"ab_noise_{i:02d}_{round_ms}ms",
            repo,
            base,
            [TEST],
            worktrees,
            env,
            580,
            "--rounds",
            str(rounds),
            *(["--seed", seeds[i]] if i < len(seeds) else []),
        )
        cases = (doc.get("ab") or {}).get("cases") or []
        log(f"ab-noise: {variant}: exit {code}, {wall:.0f} s, {len(cases)} traced case(s)")
    log(f"ab-noise: done in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
