"""What A/B mode costs on the host clock against a baseline-mode gate, at 10 and 100 cases.

    python scripts/ab_host_cost.py [--cases 10,100] [--process auto|shared|separate] [--out DIR]
    python scripts/ab_host_cost.py --aa-runs 30 [--cases 100] [--out DIR]

A throwaway git project holds N perf cases (one parametrized test; each case sorts its own list, ~10-20 us a
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

--aa-runs R: the A/A rate instead. One project per N (base and head the same code), its worktree and A/A
made by one A/B run (not counted), then R warm A/B runs, each printing its verdicts and cost; a run with any
case regressed or improved is a failed run (the per-run budget, false_alarm_pct, is 1%). Ends with
    ab-host-aa: N cases: F of R runs failed (95% upper bound U%); cases called C; inconclusive I; wall s
and keeps each run's JSON results in DIR when --out is given (their `ab.cases` hold every round's medians).

--slow-pct P1,P2 [--slow-cases K]: power instead. Per P, a head whose first K cases sort a list P% longer
(the slowdown that makes, measured here first), one A/B run and one warm run:
    ab-host-slow: N cases, K slowed by P% (measured M%), first|warm run W s: caught C of K; others called O; ...
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
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
    data = {data}
    perfgate(sorted, data)
"""

# --slow-pct: the same cases through one function on both sides, which the head makes spin a few loop turns
# longer after the sort in some cases (case index -> turns)
SLOW_SUITE = """
import random
import pytest

N = {n}
SPIN = {spin}


def work(data, spin):
    out = sorted(data)
    for _ in range(spin):
        pass
    return out


@pytest.mark.parametrize("i", range(N))
def test_sort(perfgate, i):
    data = {data}
    perfgate(work, data, SPIN.get(i, 0))
"""

PYPROJECT = """
[tool.pytest.ini_options]

[tool.perfgate]
noise_branch = "*"
"""


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.strip()


# each case's list: 400 random floats (a ~10-20 us sort), or, with --equal-floats, the list this script built
# before issue 30's last session found it out: 400 copies of one float (a new generator per element), whose
# sort is one pass, ~2 us, and whose sides differ steadily by up to +-10% in a shared host (docs/ab.md)
RANDOM_DATA = "(lambda rng: [rng.random() for _ in range(400)])(random.Random(i))"
EQUAL_DATA = "[random.Random(i).random() for _ in range(400)]"
DATA = {"data": RANDOM_DATA}


def project(root: Path, n: int, slow: dict[int, int] | None = None) -> Path:
    """A git project of n cases: a base commit and a head commit with the same code (or, with `slow`, whose
    cases of those indices spin that many loop turns after the sort: SLOW_SUITE)."""
    repo = root / (f"project-{n}" + (f"-slow-{max(slow.values())}" if slow else ""))
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for key, value in (("user.email", "bench@example.com"), ("user.name", "bench"), ("commit.gpgsign", "false")):
        _git(repo, "config", key, value)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "test_perf.py").write_text(SLOW_SUITE.format(n=n, spin={}, **DATA) if slow else SUITE.format(n=n, **DATA))
    (repo / ".gitignore").write_text(".perfgate/\nbaselines/\n*.json\n*.md\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    if slow:
        (repo / "test_perf.py").write_text(SLOW_SUITE.format(n=n, spin=slow, **DATA))
    _git(repo, "commit", "-q", "-a", "--allow-empty", "-m", "head: the same code" if not slow else "head: slower")
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


def aa_runs(root: Path, n: int, runs: int, process: str, env: dict[str, str], out: Path | None) -> None:
    """R warm unchanged A/B runs of an n-case project: how many failed (any case called)."""
    repo = project(root, n)
    worktrees = f"--perfgate-worktree-dir={root / 'worktrees'}"
    ab = ("--perfgate", "--perfgate-base", "HEAD~1", worktrees, f"--perfgate-ab-process={process}")
    timed(repo, env, *ab)  # the worktree and the A/A cache: what later pushes of a pull request reuse
    failed = called = inconclusive = 0
    walls = []
    for r in range(runs):
        json_out = () if out is None else (f"--perfgate-json={out / f'aa-{n}-{r}.json'}",)
        wall, proc = timed(repo, env, *ab, *json_out)
        walls.append(wall)
        verdicts = last(proc.stdout, "perfgate: A/B gate")
        counts = {word: _count(verdicts, word) for word in ("regressed", "improved", "inconclusive")}
        failed += counts["regressed"] + counts["improved"] > 0
        called += counts["regressed"] + counts["improved"]
        inconclusive += counts["inconclusive"]
        print(f"ab-host-aa: {n} cases: run {r + 1}: {wall:.1f} s: {verdicts}", flush=True)
        print(f"ab-host-aa: {n} cases: run {r + 1}: {last(proc.stdout, 'perfgate: A/B cost')}", flush=True)
    upper = 100.0 * (1.0 - 0.025 ** (1.0 / runs)) if failed == 0 else math.nan
    walls.sort()
    print(
        f"ab-host-aa: {n} cases: {failed} of {runs} runs failed"
        + (f" (95% upper bound {upper:.1f}%)" if failed == 0 else "")
        + f"; cases called {called}; inconclusive {inconclusive}; wall median {walls[len(walls) // 2]:.1f} s "
        f"(min {walls[0]:.1f}, max {walls[-1]:.1f}); load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def slow_runs(root: Path, n: int, pcts: list[float], cases: int, process: str, env: dict[str, str]) -> None:
    """Per injected slowdown: the head's first `cases` cases spin the loop turns that make about pct% (measured
    here, not assumed); one A/B run (its worktree and A/A made on the way) and one warm run, and how many of
    the slowed cases each called regressed (and of the others, called anything)."""
    for pct in pcts:
        spin, measured = _spin_for(pct)
        repo = project(root, n, {i: spin for i in range(cases)})
        worktrees = f"--perfgate-worktree-dir={root / 'worktrees'}"
        ab = ("--perfgate", "--perfgate-base", "HEAD~1", worktrees, f"--perfgate-ab-process={process}")
        for label in ("first", "warm"):
            json_path = root / f"slow-{pct}-{label}.json"
            wall, proc = timed(repo, env, *ab, f"--perfgate-json={json_path}")
            rows = [c for c in json.loads(json_path.read_text())["comparisons"] if c["metric"] == "median_ms"]
            slowed = [c for c in rows if _index(c["case_id"]) < cases]
            caught = sum(c["verdict"] == "regressed" for c in slowed)
            others = sum(c["verdict"] in ("regressed", "improved") for c in rows if _index(c["case_id"]) >= cases)
            detects = sorted(c["detects_pct"] for c in slowed if c.get("detects_pct") is not None)
            changes = sorted(c["change_pct"] for c in slowed)
            print(
                f"ab-host-slow: {n} cases, {cases} slowed by {pct:g}% (measured {measured:+.2f}%), {label} run "
                f"{wall:.1f} s: caught {caught} of {cases}; others called {others}; change median "
                f"{changes[len(changes) // 2]:+.2f}%; detects median "
                f"{detects[len(detects) // 2] if detects else math.inf:.2f}%",
                flush=True,
            )
            print(f"ab-host-slow: {last(proc.stdout, 'perfgate: A/B gate')}", flush=True)


def _spin_for(pct: float) -> tuple[int, float]:
    """The loop turns whose measured slowdown of SLOW_SUITE's work() is nearest pct%, and that slowdown: one
    list, so only the turns differ (alternated 25-call loops, the median ratio of 300)."""
    import random
    import statistics

    namespace: dict[str, object] = {}
    work_source = SLOW_SUITE[SLOW_SUITE.index("def work") : SLOW_SUITE.index("@pytest")]
    exec(work_source, namespace)  # noqa: S102 (the suite's own function, our text)
    work = namespace["work"]
    data = eval(DATA["data"], {"random": random, "i": 0})  # noqa: S307 (our own text: the suite's list)

    def slowdown(spin: int) -> float:
        ratios = []
        for r in range(300):
            times = {}
            for k in (0, spin) if r % 2 else (spin, 0):
                t0 = time.perf_counter_ns()
                for _ in range(25):
                    work(data, k)  # type: ignore[operator]
                times[k] = time.perf_counter_ns() - t0
            ratios.append(times[spin] / times[0])
        return 100.0 * (statistics.median(ratios) - 1.0)

    found = [(spin, slowdown(spin)) for spin in (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)]
    return min(found, key=lambda f: abs(f[1] - pct))


def _index(case_id: str) -> int:
    found = re.search(r"\[(\d+)\]$", case_id)
    return int(found.group(1)) if found else -1


def _count(line: str, word: str) -> int:
    """'... 100 case(s): 95 unchanged, 5 inconclusive' -> 5 for 'inconclusive'."""
    found = re.search(rf"(\d+) {word}", line)
    return int(found.group(1)) if found else 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="10,100", help="comma-separated case counts")
    p.add_argument("--process", default="auto", choices=("auto", "shared", "separate"))
    p.add_argument("--out", type=Path, help="write ab_host_cost.md (or, with --aa-runs, each run's JSON) here")
    p.add_argument("--aa-runs", type=int, default=0, help="measure the A/A rate over this many warm runs instead")
    p.add_argument("--slow-pct", default="", help="instead: inject these slowdowns (comma-separated %%) ...")
    p.add_argument("--equal-floats", action="store_true", help="the 2 us suite measured before (400 equal floats)")
    p.add_argument("--slow-cases", type=int, default=10, help="... into this many of the head's cases")
    args = p.parse_args()
    if args.equal_floats:
        DATA["data"] = EQUAL_DATA
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERFGATE_", "GITHUB_"))}
    env.update(PERFGATE_PROGRESS="0", PYTHONDONTWRITEBYTECODE="1")
    if args.slow_pct:
        with tempfile.TemporaryDirectory(prefix="ab-host-slow-") as tmp:
            pcts = [float(x) for x in args.slow_pct.split(",")]
            for n in (int(x) for x in args.cases.split(",")):
                slow_runs(Path(tmp), n, pcts, min(args.slow_cases, n), args.process, env)
        return
    if args.aa_runs:
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="ab-host-aa-") as tmp:
            for n in (int(x) for x in args.cases.split(",")):
                aa_runs(Path(tmp), n, args.aa_runs, args.process, env, args.out)
        return
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
