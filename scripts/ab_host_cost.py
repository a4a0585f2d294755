"""What A/B mode costs on the host clock against a baseline-mode gate, at 10 and 100 cases.

    python scripts/ab_host_cost.py [--cases 10,100] [--process auto|shared|separate] [--out DIR]

A throwaway git project holds N perf cases (one parametrized test; each case sorts its own list, ~50 us a
call, on the host clock) with perfgate's default measurement settings. Per N, each timed as a whole
process on this machine:
  1. baseline mode: `pytest --perfgate` once to write the initial baseline (not timed), then again (the
     gate against an uncalibrated baseline, which never confirms); then `perfgate calibrate --runs 3` (not
     timed) and the gate again: what the README's quick start gives, suspects confirmed in fresh processes;
  2. A/B cold: `pytest --perfgate --perfgate-base HEAD~1` against a parent commit holding the same code
     (its worktree is created and its A/A measured by a second base process);
  3. A/B warm: the same again (worktree and A/A reused): what a pull request's second push costs.
Base and head hold the same code, so the A/B runs are also A/A runs: their verdicts are printed. Prints
one line per N (ratios against the calibrated gate, and against the uncalibrated one):
    ab-host-cost: N cases: gate B s (uncalibrated U s); A/B cold C s (xC/B, xC/U), warm W s (xW/B, xW/U)
    ab-host-cost: N cases: A/B warm phases: perfgate: A/B cost: ...
and writes the table to DIR/ab_host_cost.md when --out is given. The target (issue 30): A/B at 100 cases
within 3x the baseline gate, warm.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIMEOUT_S = 1800.0

SUITE = """
import random
import pytest

N = {n}


@pytest.mark.parametrize("i", range(N))
def test_sort(perfgate, i):
    data = [random.Random(i).random() for _ in range(400)]
    perfgate(sorted, data)
"""

PYPROJECT = """
[tool.pytest.ini_options]

[tool.perfgate]
noise_branch = "*"
"""


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.strip()


def project(root: Path, n: int) -> Path:
    """A git project of n cases: a base commit and a head commit with the same code."""
    repo = root / f"project-{n}"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for key, value in (("user.email", "bench@example.com"), ("user.name", "bench"), ("commit.gpgsign", "false")):
        _git(repo, "config", key, value)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "test_perf.py").write_text(SUITE.format(n=n))
    (repo / ".gitignore").write_text(".perfgate/\nbaselines/\n*.json\n*.md\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "head: the same code")
    return repo


def timed(repo: Path, env: dict[str, str], *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    argv = [sys.executable, "-m", "perfgate", *args[1:]] if args[0] == "perfgate" else [*pytest, *args]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    wall = time.monotonic() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(
            f"ab-host-cost: {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr}"
        )
    return wall, proc


def last(text: str, prefix: str) -> str:
    return next((line for line in reversed(text.splitlines()) if line.startswith(prefix)), "(not printed)")


def one_size(root: Path, n: int, process: str, env: dict[str, str]) -> dict[str, object]:
    repo = project(root, n)
    timed(repo, env, "--perfgate")  # the initial baseline
    uncalibrated_s, _ = timed(repo, env, "--perfgate")
    timed(repo, env, "perfgate", "calibrate", "--runs", "3", "--reason", "bench", "--", "-p", "no:randomly")
    baseline_s, gate = timed(repo, env, "--perfgate")
    worktrees = f"--perfgate-worktree-dir={root / 'worktrees'}"
    ab = ("--perfgate", "--perfgate-base", "HEAD~1", worktrees, f"--perfgate-ab-process={process}")
    cold_s, cold = timed(repo, env, *ab)
    warm_s, warm = timed(repo, env, *ab)
    return {
        "n": n,
        "uncalibrated_s": uncalibrated_s,
        "baseline_s": baseline_s,
        "cold_s": cold_s,
        "warm_s": warm_s,
        "gate": last(gate.stdout, "perfgate: gate"),
        "cold": last(cold.stdout, "perfgate: A/B gate"),
        "warm": last(warm.stdout, "perfgate: A/B gate"),
        "cold_phases": last(cold.stdout, "perfgate: A/B cost"),
        "warm_phases": last(warm.stdout, "perfgate: A/B cost"),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="10,100", help="comma-separated case counts")
    p.add_argument("--process", default="auto", choices=("auto", "shared", "separate"))
    p.add_argument("--out", type=Path, help="write ab_host_cost.md here")
    args = p.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERFGATE_", "GITHUB_"))}
    env.update(PERFGATE_PROGRESS="0", PYTHONDONTWRITEBYTECODE="1")
    lines = [
        "| cases | gate, uncalibrated | gate, calibrated | A/B cold | A/B warm | A/B warm / calibrated gate |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory(prefix="ab-host-cost-") as tmp:
        for n in (int(x) for x in args.cases.split(",")):
            r = one_size(Path(tmp), n, args.process, env)
            u, b = float(r["uncalibrated_s"]), float(r["baseline_s"])  # type: ignore[arg-type]
            c, w = float(r["cold_s"]), float(r["warm_s"])  # type: ignore[arg-type]
            print(
                f"ab-host-cost: {n} cases: gate {b:.1f} s (uncalibrated {u:.1f} s); A/B cold {c:.1f} s "
                f"(x{c / b:.2f}, x{c / u:.2f}), warm {w:.1f} s (x{w / b:.2f}, x{w / u:.2f})"
            )
            for key in ("gate", "cold", "warm", "cold_phases", "warm_phases"):
                print(f"ab-host-cost: {n} cases: {key}: {r[key]}")
            lines.append(f"| {n} | {u:.1f} s | {b:.1f} s | {c:.1f} s | {w:.1f} s | x{w / b:.2f} |")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "ab_host_cost.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
