"""A ~2 ms single-threaded host function gated under load, on the wall clock and on CPU time (issue 31 req 7).

    python scripts/host_timer_load.py [--runs 7] [--calibration-runs 6] [--load N] [--calibrate-loaded] [--out DIR]

A throwaway project holds one pure-Python function (a loop sized here to take ~2 ms) measured twice: `test_wall`
(`host_timer = "wall"`) and `test_cpu` (`host_timer = "thread_cpu"`). `perfgate calibrate` measures both in
fresh processes (on the machine as it is, or under the load too with --calibrate-loaded); then each of --runs
`pytest --perfgate` runs (confirmation processes included: the shipped defaults) is made while --load busy
processes (default: one per CPU, "both cores busy" on a 2-core box) compete for the CPUs. Per run and timer:
the verdict, the process medians the gate read, and how many samples read more than twice the calibration's
median (a preempted call). The wall clock counts the time a preempted call waits for a CPU; the thread's
CPU time does not.

Prints lines starting `host-timer-load:` and writes host_timer_load.json to --out (default: a temporary
directory, removed). Exit status 1 when the CPU-time case had more false alarms than the wall-clock case.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TIMEOUT_S = 900.0
TARGET_MS = 2.0

SUITE = """
import pytest

LOOPS = {loops}


def work():
    total = 0
    for i in range(LOOPS):
        total += i * i
    return total


@pytest.mark.perfgate(host_timer="wall")
def test_wall(perfgate):
    perfgate(work)


@pytest.mark.perfgate(host_timer="thread_cpu")
def test_cpu(perfgate):
    perfgate(work)
"""
PYPROJECT = """
[tool.perfgate]
noise_branch = "*"   # this project is no git checkout: every run's branch is ""
"""


def loops_for(target_ms: float) -> int:
    """The loop length that takes `target_ms` of this thread's CPU here (CPU time: the load does not matter)."""
    loops = 10_000
    while True:
        start = time.thread_time_ns()
        total = 0
        for i in range(loops):
            total += i * i
        ms = (time.thread_time_ns() - start) / 1e6
        if ms > target_ms / 4:
            return max(1, round(loops * target_ms / ms))
        loops *= 4


def _run(argv: list[str], project: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PERFGATE_DB", "GITHUB_STEP_SUMMARY")}
    env["PYTEST_ADDOPTS"] = "-p no:cacheprovider -p no:randomly"
    return subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


class Load:
    """`n` busy processes of this script's own, ended (by their ids) when the block ends."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Load:
        spin = "while True:\n    pass\n"
        self.procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(self.n)]
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait(timeout=30)


def detects(project: Path) -> dict[str, float | None]:
    """What each case detects (%), from the calibrated baseline."""
    doc = json.loads(next((project / "baselines").glob("*.json")).read_text())
    return {cid.split("::")[-1]: c.get("threshold_pct") for cid, c in doc["cases"].items()}


def calibrate(project: Path, runs: int) -> dict[str, float]:
    cal = _run([sys.executable, "-m", "perfgate", "calibrate", "--runs", str(runs), "--reason", "load"], project)
    if cal.returncode != 0:
        raise SystemExit(f"host-timer-load: calibration failed:\n{cal.stdout[-3000:]}{cal.stderr[-3000:]}")
    doc = json.loads(next((project / "baselines").glob("*.json")).read_text())
    for line in (cal.stdout + cal.stderr).splitlines():
        if "preempted" in line:
            print(f"host-timer-load: calibrate said: {line.strip()}", flush=True)
    return {cid.split("::")[-1]: float(c["median_ms"]) for cid, c in doc["cases"].items()}


def gate(project: Path, i: int, centres: dict[str, float]) -> dict[str, Any]:
    out = project / f"gate-{i}.json"
    run = _run(
        [sys.executable, "-m", "pytest", "--perfgate", "--perfgate-json", str(out), "--perfgate-json-samples"], project
    )
    if run.returncode not in (0, 1) or not out.exists():
        raise SystemExit(
            f"host-timer-load: gate {i} exited {run.returncode}:\n{run.stdout[-3000:]}{run.stderr[-3000:]}"
        )
    doc = json.loads(out.read_text())
    rows = {c["case_id"].split("::")[-1]: c for c in doc["comparisons"] if c["metric"] == "median_ms"}
    cases = {c["case_id"].split("::")[-1]: c for c in doc["cases"]}
    record: dict[str, Any] = {"exit": run.returncode}
    for name, res in cases.items():
        samples = res.get("samples_ms") or []
        record[name] = {
            "timer": res["timing"]["timer"],
            "verdict": rows[name]["verdict"],
            "process_medians_ms": [res["timing"]["median_ms"], *res["confirmation_medians_ms"]],
            "change_pct": rows[name]["change_pct"],
            "preempted_samples": sum(s > 2 * centres[name] for s in samples),
            "samples": len(samples),
            "max_sample_ms": max(samples) if samples else None,
            "cpu_share_pct": (res.get("host_state") or {}).get("cpu_share_pct"),
        }
    return record


def summary(runs: list[dict[str, Any]], centres: dict[str, float], sees: dict[str, float | None]) -> list[str]:
    lines = []
    for name, label in (("test_wall", "wall clock"), ("test_cpu", "thread CPU time")):
        alarms = sum(r[name]["verdict"] == "regressed" for r in runs)
        firsts = [r[name]["process_medians_ms"][0] for r in runs]
        pre = sum(r[name]["preempted_samples"] for r in runs)
        total = sum(r[name]["samples"] for r in runs)
        worst = max((r[name]["max_sample_ms"] or 0.0) for r in runs)
        sees_pct = sees.get(name)
        lines.append(
            f"host-timer-load: {label:15s}: false alarms {alarms}/{len(runs)} runs; calibration median "
            f"{centres[name]:.3f} ms, detects >= {sees_pct if sees_pct is not None else float('nan'):.1f}%; "
            f"run medians {min(firsts):.3f}-{max(firsts):.3f} ms (median {statistics.median(firsts):.3f}); "
            f"samples > 2x calibration {pre}/{total}, slowest {worst:.2f} ms"
        )
    shares = [r["test_wall"]["cpu_share_pct"] for r in runs if r["test_wall"]["cpu_share_pct"] is not None]
    if shares:
        lines.append(
            f"host-timer-load: the measuring thread ran {min(shares):.0f}-{max(shares):.0f}% of the wall time "
            "under load (HostState.cpu_share_pct of the wall-clock case)"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=7, help="gate runs under load")
    p.add_argument("--calibration-runs", type=int, default=6)
    p.add_argument("--load", type=int, default=os.cpu_count() or 2, help="busy processes during the gates")
    p.add_argument("--calibrate-loaded", action="store_true", help="calibrate under the same load")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="perfgate-host-timer-") as tmp:
        out = args.out or Path(tmp)
        project = out / "project"
        project.mkdir(parents=True, exist_ok=True)
        loops = loops_for(TARGET_MS)
        (project / "test_host.py").write_text(SUITE.format(loops=loops))
        (project / "pyproject.toml").write_text(PYPROJECT)
        print(
            f"host-timer-load: a {loops:,}-iteration loop (~{TARGET_MS} ms of CPU here), {args.load} busy "
            f"process(es) during the gates",
            flush=True,
        )
        with Load(args.load if args.calibrate_loaded else 0):
            centres = calibrate(project, args.calibration_runs)
        runs = []
        for i in range(args.runs):
            with Load(args.load):
                runs.append(gate(project, i, centres))
            w, c = runs[-1]["test_wall"], runs[-1]["test_cpu"]
            print(
                f"host-timer-load: run {i + 1}/{args.runs}: wall {w['verdict']} "
                f"({', '.join(f'{v:.2f}' for v in w['process_medians_ms'])} ms), cpu {c['verdict']} "
                f"({', '.join(f'{v:.3f}' for v in c['process_medians_ms'])} ms)",
                flush=True,
            )
        lines = summary(runs, centres, detects(project))
        lines.append(f"host-timer-load: {time.monotonic() - started:.0f} s")
        print("\n".join(lines))
        doc = {"loops": loops, "load": args.load, "calibration_medians_ms": centres, "runs": runs}
        (out / "host_timer_load.json").write_text(json.dumps(doc, indent=1))
    wall = sum(r["test_wall"]["verdict"] == "regressed" for r in runs)
    cpu = sum(r["test_cpu"]["verdict"] == "regressed" for r in runs)
    return 0 if cpu <= wall else 1


if __name__ == "__main__":
    sys.exit(main())
