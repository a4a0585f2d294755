"""A/B mode's false alarms and detection on the H100, on cases the bundled suite does not tune for.

    python lab/gpu/ab_accuracy.py [--aa-runs 3] [--inject-runs 2] [--budget-s 420]

A throwaway project holds five cases (time-only cuBLAS GEMM, Triton matmul vs cuBLAS, a 12 us add, a 1 GB
copy, Triton flash attention vs SDPA: scripts/accuracy/test_accuracy_cases.py's), each in six slots
(0 1 2a 2b 2c 3). Its base commit injects nothing. Two head commits sit on it:
  - "aa": identical code (a new commit, the same tree): every comparison is an A/A;
  - "inject": slot 1 of every case runs a spin of 1% of the case's own time after the work, 2a/2b/2c 2%,
    3 3%; slot 0 injects nothing (an A/A comparison inside an injected run).
Each run is `perfgate ab BASE -- ab_cases/test_ab_accuracy.py` exactly as a user runs it (shipped
defaults: 10 rounds, 1% false-alarm budget per run, confirmation stages). The first run measures the
A/A with a second base process and caches it; later runs reuse it. New runs start only while the
budget lasts; what finished is scored.

Prints (and writes to $OUT/ab_accuracy.md; every run's log and JSON are in $OUT/ab_accuracy.tgz):
    ab-accuracy: case | A/A false alarms (time, speedup) | 1% | 2% | 3% caught | detects (median) | round noise
A trial is caught when the case's time or speedup regressed; an A/A false alarm is a regressed row in a
slot (or run) that injected nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ab_lab import (
    LOGS,
    ROOT,
    SCRATCH_ROOT,
    case_slot,
    check_tools,
    commit,
    env_with,
    git,
    head,
    log,
    new_project,
    perfgate_ab,
    spins,
    write_summary,
)

GPU_NAMES = ("cublas_matmul", "triton_matmul", "small_add", "copy", "attention")
HOST_NAMES = ("json_encode", "sort")  # --host: the plumbing on a machine without a GPU (no numbers to keep)
SLOTS = ("0", "1", "2a", "2b", "2c", "3")
LEVEL = {"0": 0.0, "1": 1.0, "2a": 2.0, "2b": 2.0, "2c": 2.0, "3": 3.0}
SCRATCH = SCRATCH_ROOT / "accuracy"
TEST = "ab_cases/test_ab_accuracy.py"


def project(names: tuple[str, ...], fixed_spin: bool = False) -> tuple[Path, str, str, str]:
    """The throwaway repository: base, an A/A head and an injected head (commit shas)."""
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
    base = head(repo)
    aa = head(commit(repo, "aa: the same code"))
    inject: dict[str, object] = {f"{case}-{slot}": level for case in names for slot, level in LEVEL.items() if level}
    if fixed_spin:  # each level's spin in cycles, measured once against the case (spin_calibration.py)
        inject = dict(spins(repo, "ab_cases", "accuracy_cases", inject))  # type: ignore[arg-type]
    injected = head(commit(repo, "inject 1/2/3%", {"ab_cases/inject.json": json.dumps(inject, indent=1)}))
    return repo, base, aa, injected


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--aa-runs", type=int, default=3)
    p.add_argument("--inject-runs", type=int, default=2)
    p.add_argument("--budget-s", type=float, default=420.0, help="start no new run after this many seconds")
    p.add_argument("--host", action="store_true", help="host-clock cases: try the plumbing without a GPU")
    p.add_argument("--names", default="", help="comma-separated cases (default: all five)")
    p.add_argument("--fixed-spin", action="store_true", help="inject spins of fixed cycles, calibrated once")
    p.add_argument("--process", default="", help="perfgate ab --process: auto, shared or separate (default: its own)")
    args = p.parse_args()
    check_tools(gpu=not args.host)
    started = time.monotonic()
    names = HOST_NAMES if args.host else GPU_NAMES
    if args.names:
        names = tuple(n for n in args.names.split(",") if n)
    extra = ("--process", args.process) if args.process else ()
    repo, base, aa, injected = project(names, args.fixed_spin)
    env = env_with(TRITON_CACHE_DIR=str(SCRATCH / "triton-head"), PERFGATE_KERNEL_CACHE=str(SCRATCH / "kernels"))
    shutil.rmtree(SCRATCH / "worktrees", ignore_errors=True)
    plan = (
        [("inject", injected)] * min(1, args.inject_runs)
        + [("aa", aa)] * args.aa_runs
        + [("inject", injected)] * (args.inject_runs - 1)
    )
    runs: list[tuple[str, dict]] = []
    for i, (kind, sha) in enumerate(plan):
        if time.monotonic() - started > args.budget_s:
            log(f"ab-accuracy: budget spent after {i} run(s)")
            break
        git(repo, "checkout", "-q", "--detach", sha)
        code, _, doc = perfgate_ab(
            f"ab_accuracy_{i:02d}_{kind}", repo, base, [TEST], SCRATCH / "worktrees", env, 580, *extra
        )
        if not doc:
            log(f"ab-accuracy: run {i} ({kind}) wrote no results (exit {code}); see its log")
            continue
        runs.append((kind, doc))
    (LOGS / "ab_accuracy.json").write_text(
        json.dumps([{"kind": k, "comparisons": d["comparisons"], "ab": d.get("ab")} for k, d in runs])
    )
    table = score(runs, names) + aa_offsets(names)
    for line in table:
        print(f"ab-accuracy: {line}")
    log(f"ab-accuracy: {len(runs)} run(s) in {time.monotonic() - started:.0f} s")
    write_summary(table)


def score(runs: list[tuple[str, dict]], names: tuple[str, ...]) -> list[str]:
    aa: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))  # case -> metric -> alarms
    caught: dict[str, dict[float, list[bool]]] = defaultdict(lambda: defaultdict(list))
    detects: dict[str, list[float]] = defaultdict(list)
    noise: dict[str, list[float]] = defaultdict(list)
    process: dict[str, int] = defaultdict(int)
    for kind, doc in runs:
        rows: dict[tuple[str, str], dict] = defaultdict(dict)
        for c in doc["comparisons"]:
            if c["metric"] in ("median_ms", "speedup") and c.get("threshold_pct") is not None:
                case, slot = case_slot(c["case_id"])
                rows[(case, slot)][c["metric"]] = c
        for (case, slot), metrics in rows.items():
            level = LEVEL[slot] if kind == "inject" else 0.0
            regressed = {m: r["verdict"] == "regressed" for m, r in metrics.items()}
            time_row = metrics.get("median_ms")
            if time_row:
                detects[case].append(time_row["threshold_pct"])
                noise[case].append(time_row.get("noise_pct") or 0.0)
                process[case] += "processes differ" in (time_row.get("note") or "")
            if level == 0.0:
                for m, alarm in regressed.items():
                    aa[case][m].append(alarm)
            else:
                caught[case][level].append(any(regressed.values()))
    header = [
        "| case | A/A false alarms: time | A/A: speedup | 1% caught | 2% caught | 3% caught | detects (median) "
        "| round noise (median) | rows with process noise |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines, total_aa, total = [], defaultdict(list), defaultdict(list)
    for case in names:
        cells = [_frac(aa[case]["median_ms"]), _frac(aa[case]["speedup"])]
        cells += [_frac(caught[case][lv]) for lv in (1.0, 2.0, 3.0)]
        cells += [
            f"{statistics.median(detects[case]):.2f}%" if detects[case] else "-",
            f"{statistics.median(noise[case]):.2f}%" if noise[case] else "-",
            str(process[case]),
        ]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
        for m in ("median_ms", "speedup"):
            total_aa[m] += aa[case][m]
        for lv in (1.0, 2.0, 3.0):
            total[lv] += caught[case][lv]
    lines.append(
        "| **all** | "
        + " | ".join(
            [_frac(total_aa["median_ms"]), _frac(total_aa["speedup"])] + [_frac(total[lv]) for lv in (1.0, 2.0, 3.0)]
        )
        + " | | | |"
    )
    m_values = sorted({d["ab"]["comparisons"] for _, d in runs if d.get("ab")})
    kinds = f"{sum(k == 'aa' for k, _ in runs)} A/A run(s), {sum(k == 'inject' for k, _ in runs)} injected run(s)"
    return [f"{kinds}; comparisons per run (m): {m_values}", *header, *lines]


def aa_offsets(names: tuple[str, ...]) -> list[str]:
    """The cached A/A (two base processes, measured in the first run): per case, how far apart the two
    processes' mean time ratio was, over its slots. Large offsets mean process noise (docs/ab.md)."""
    found = sorted((SCRATCH / "worktrees").glob("*/*.cache/aa.json"))
    if not found:
        return ["(no A/A cache found)"]
    doc = json.loads(found[-1].read_text())
    entry = next(iter(doc["devices"].values()))
    per_case: dict[str, list[float]] = defaultdict(list)
    for case_id, metrics in entry["cases"].items():
        if "median_ms" in metrics:
            per_case[case_slot(case_id)[0]].append(100 * metrics["median_ms"]["mean_log"])
    lines = ["", "| case | A/A offset between two base processes (%, per slot) |", "|---|---|"]
    lines += [f"| {c} | " + ", ".join(f"{v:+.2f}" for v in per_case[c]) + " |" for c in names if per_case[c]]
    return lines


def _frac(values: list[bool]) -> str:
    return f"{sum(values)}/{len(values)}" if values else "-"


if __name__ == "__main__":
    main()
