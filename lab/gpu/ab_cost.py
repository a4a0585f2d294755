"""What A/B mode costs on the bundled suite, against today's baseline gate, cold and warm.

    python lab/gpu/ab_cost.py [--skip-baseline]

A throwaway project holds the bundled suite (kernels/, kernels/tests/test_perf.py, the committed H100
baseline). In order, each timed as a whole process:
  1. baseline cold: `pytest --perfgate --perfgate-strict kernels/tests/test_perf.py` with empty Triton and
     extension caches (what today's cold gate costs);
  2. baseline warm: the same again;
  3. A/B cold: a new base commit (its worktree, Triton cache and CUDA extension build are new, its A/A is
     measured by a second base process), the head's caches warm from 1-2: `perfgate ab BASE -- ...`;
  4. A/B warm: the same again (worktree, caches and A/A reused).
The head and the base hold the same code, so 3 and 4 are also A/A runs of the bundled suite: their
verdicts are printed. Prints:
    ab-cost: baseline cold X s, warm Y s; A/B cold Z s (xZ/X, target <= 2x), warm W s (xW/Y, target <= 2.5x)
    ab-cost: A/B cold phases: perfgate: A/B cost: worktree ..., start ..., ...
and writes $OUT/ab_cost.md (every log in $OUT/ab_cost.tgz).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ab_lab import (
    LOGS,
    SCRATCH_ROOT,
    check_tools,
    commit,
    env_with,
    head,
    log,
    new_project,
    perfgate_ab,
    timed,
    write_summary,
)

SCRATCH = SCRATCH_ROOT / "cost"
SUITE = "kernels/tests/test_perf.py"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--skip-baseline", action="store_true", help="A/B only (the baseline numbers are known)")
    args = p.parse_args()
    check_tools()
    repo = new_project(SCRATCH / "repo", files=("kernels", "conftest.py", "pyproject.toml", "baselines"))
    caches = {"TRITON_CACHE_DIR": str(SCRATCH / "triton"), "PERFGATE_KERNEL_CACHE": str(SCRATCH / "kernels")}
    for d in caches.values():
        shutil.rmtree(d, ignore_errors=True)
    env = env_with(**caches)
    walls: dict[str, float] = {}
    if not args.skip_baseline:
        gate = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "--perfgate",
            "--perfgate-strict",
            "--perfgate-no-store",
            SUITE,
        ]
        for name in ("baseline_cold", "baseline_warm"):
            code, walls[name], text = timed(name, gate, repo, env, 560)
            log(f"  {name}: {_last(text, 'perfgate: gate')}")
    base = head(commit(repo, "a new base commit (cold: nothing cached for it)"))
    commit(repo, "head: the same code")
    worktrees = SCRATCH / "worktrees"
    shutil.rmtree(worktrees, ignore_errors=True)
    phases = {}
    for name in ("ab_cold", "ab_warm"):
        started = time.monotonic()
        code, _, doc = perfgate_ab(name, repo, base, [SUITE], worktrees, env, 560, "--strict")
        walls[name] = time.monotonic() - started
        phases[name] = _last((LOGS / f"{name}.log").read_text(), "perfgate: A/B cost")
        verdicts = Counter(c["verdict"] for c in doc.get("comparisons", ()) if c["metric"] in ("median_ms", "speedup"))
        log(f"  {name}: exit {code}; time and speedup verdicts (base == head code): {dict(verdicts)}")
    lines = summary(walls, phases)
    for line in lines:
        print(f"ab-cost: {line}")
    write_summary(lines)


def _last(text: str, prefix: str) -> str:
    return next((line for line in reversed(text.splitlines()) if line.startswith(prefix)), "(not printed)")


def summary(walls: dict[str, float], phases: dict[str, str]) -> list[str]:
    def ratio(a: str, b: str) -> str:
        return f"x{walls[a] / walls[b]:.2f}" if a in walls and b in walls else "x?"

    lines = ["| gate | cold | warm |", "|---|---:|---:|"]
    for mode, prefix in (("baseline mode", "baseline"), ("A/B mode", "ab")):
        cells = [f"{walls[f'{prefix}_{t}']:.1f} s" if f"{prefix}_{t}" in walls else "-" for t in ("cold", "warm")]
        lines.append(f"| {mode} | {cells[0]} | {cells[1]} |")
    lines.append(
        f"A/B over baseline: cold {ratio('ab_cold', 'baseline_cold')} (target <= 2), "
        f"warm {ratio('ab_warm', 'baseline_warm')} (target <= 2.5)"
    )
    lines += [f"{name} phases: {line}" for name, line in phases.items()]
    return lines


if __name__ == "__main__":
    main()
