"""Issue 30's "must be shown" on the H100, one process mode per call: A/B mode's false alarms and 2%
slowdowns caught, on torch library kernels and Triton kernels, with the injected slowdowns' size measured.

    python3 lab/gpu/ab_modes.py shared --budget-s 510     # one GPU (CUDA_VISIBLE_DEVICES picks which)
    python3 lab/gpu/ab_modes.py separate --budget-s 510   # the other mode, side by side on another GPU
    python3 lab/gpu/ab_modes.py separate --host --budget-s 200   # the plumbing on a machine without a GPU

A throwaway project (lab/gpu/ab_cases/test_ab_modes.py over modes_cases.py: a cuDNN channels_last bf16
conv2d, SDPA on flash, a cuBLAS bf16 GEMM, index_add_ (atomics), cumsum (a scan), sort, a ~10 us add, the
repository's Triton matmul and softmax against torch's) holds every case in two slots: "0" injects nothing
in any commit (an A/A comparison inside every run), "2" runs a GPU spin after the work in the injected
commit. Each spin's size is measured before the runs, in one process, against the case itself
(spin_calibration.py: the case plus the spin against the case plus a 0-cycle spin, interleaved, L2 flushed):
that measured effect is what the table calls the injection's size.

The runs, each `perfgate ab BASE --process MODE --measure-same-code` as a user runs it (shipped defaults
otherwise): an injected run first (cold: caches, the A/A twin), then `--aa-runs` A/A runs (head = the base's
tree in a new commit), then injected runs. A run starts only when the time it is expected to take (the latest
warm run of its kind, or the cold first run less what only it paid) fits what is left of `--budget-s`,
counted from the script's start; a run still going when the budget ends is stopped with its workers (and
reported as cut by the budget).

After every run, $OUT/ab_modes_<mode>.md (the tables so far), $OUT/ab_modes_<mode>.json (each run's rows) and
$OUT/ab_modes_<mode>.tgz (every log) are rewritten. Prints `ab-modes:` lines and, at the end, the Markdown:
per case its A/A comparisons called (0 is the target), the injected slowdown's measured size, whether
each trial was caught, the A/B's own change, what the case detects (the change caught with 80% power) and
for a miss why (its detects against the injected size, its process offset); per run the comparisons, the
fresh pair, whether sharing held and the cost line's phases.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import ab_lab  # noqa: E402

GPU_NAMES = (
    "conv_cudnn",
    "sdpa_flash",
    "gemm_cublas",
    "index_add",
    "cumsum",
    "sort",
    "add_10us",
    "triton_matmul",
    "triton_softmax",
)
HOST_NAMES = ("json_encode", "sort")
SLOTS = ("0", "2")
LEVEL_PCT = 2.0
TEST = "ab_cases/test_ab_modes.py"
MODES = ("shared", "separate")
DECIDED = ("median_ms", "speedup")
CALLS = ("regressed", "improved")

Run = dict[str, Any]  # kind, exit, wall_s, rows {"case-slot": {metric: row}}, cost, fresh, sharing


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=MODES, help="perfgate ab --process")
    p.add_argument("--budget-s", type=float, default=510.0, help="every run ends within this many seconds")
    p.add_argument("--aa-runs", type=int, default=3)
    p.add_argument("--inject-runs", type=int, default=10, help="at most (the budget decides)")
    p.add_argument("--seed", type=int, default=1, help="the first run's seed (perfgate ab --seed), +1 a run")
    p.add_argument("--names", default="", help="comma-separated cases (default: all)")
    p.add_argument("--host", action="store_true", help="host-clock cases: the plumbing without a GPU")
    args = p.parse_args()
    experiment(args, time.monotonic())


def experiment(args: argparse.Namespace, started: float) -> None:
    ab_lab.SCRIPT = f"ab_modes_{args.mode}"
    ab_lab.LOGS = ab_lab.SCRATCH_ROOT / "logs" / ab_lab.SCRIPT
    scratch = ab_lab.SCRATCH_ROOT / f"modes-{args.mode}"
    ab_lab.check_tools(gpu=not args.host)
    names = tuple(n for n in args.names.split(",") if n) or (HOST_NAMES if args.host else GPU_NAMES)
    repo, base, shas, effects = project(scratch, names, args.host)
    setup_s = time.monotonic() - started
    ab_lab.log(f"ab-modes: {args.mode}: project and spins ready in {setup_s:.0f} s")
    env = ab_lab.env_with(TRITON_CACHE_DIR=str(scratch / "triton"), PERFGATE_KERNEL_CACHE=str(scratch / "kernels"))
    plan = ["inject"] * min(1, args.inject_runs) + ["aa"] * args.aa_runs + ["inject"] * (args.inject_runs - 1)
    runs: list[Run] = []
    for i, kind in enumerate(plan):
        left = args.budget_s - (time.monotonic() - started)
        expected = _expected(runs, kind)
        if expected > left:
            ab_lab.log(f"ab-modes: {args.mode}: {left:.0f} s left, a {kind} run takes ~{expected:.0f} s: no more runs")
            break
        ab_lab.git(repo, "checkout", "-q", "--detach", shas[kind])
        extra = ("--process", args.mode, "--measure-same-code", "--seed", str(args.seed + i))
        name = f"run_{i:02d}_{kind}"
        code, wall, doc = ab_lab.perfgate_ab(name, repo, base, [TEST], scratch / "worktrees", env, left, *extra)
        runs.append(record(kind, code, wall, doc, (ab_lab.LOGS / f"{name}.log").read_text()))
        ab_lab.log(f"ab-modes: {args.mode}: {run_line(i, runs[-1])}")
        write(args.mode, runs, names, effects, time.monotonic() - started)
    lines = write(args.mode, runs, names, effects, time.monotonic() - started)
    for line in lines:
        print(f"ab-modes: {line}", flush=True)


def project(scratch: Path, names: tuple[str, ...], host: bool) -> tuple[Path, str, dict[str, str], dict[str, dict]]:
    """The throwaway repository: its base, an A/A head (the same tree) and an injected head; each spin."""
    here = Path(__file__).parent / "ab_cases"
    repo = ab_lab.new_project(
        scratch / "repo",
        {
            TEST: (here / "test_ab_modes.py").read_text(),
            "ab_cases/modes_cases.py": (here / "modes_cases.py").read_text(),
            "ab_cases/accuracy_cases.py": (ab_lab.ROOT / "scripts" / "accuracy" / "test_accuracy_cases.py").read_text(),
            "ab_cases/slots.json": json.dumps(SLOTS),
            "ab_cases/names.json": json.dumps(names),
            "ab_cases/inject.json": "{}",
        },
    )
    base = ab_lab.head(repo)
    aa = ab_lab.head(ab_lab.commit(repo, "aa: the same code"))
    levels = {f"{name}-{slot}": LEVEL_PCT for name in names for slot in SLOTS if slot != "0"}
    effects = ab_lab.spins(repo, "ab_cases", "modes_cases", levels, host)
    inject = {key: {k: v for k, v in e.items() if k in ("cycles", "seconds")} for key, e in effects.items()}
    injected = ab_lab.head(ab_lab.commit(repo, "inject 2%", {"ab_cases/inject.json": json.dumps(inject, indent=1)}))
    return repo, base, {"aa": aa, "inject": injected}, effects


def _expected(runs: list[Run], kind: str) -> float:
    """The seconds a run of `kind` is expected to take: the latest warm run of its kind; before one, the cold
    first run less what only it paid (the A/A twin, the compiles a later run did not need, and for an A/A run
    the fresh pair an injected run needs); before any run, nothing."""
    done = [r for r in runs if r["rows"] and r["cost"]]
    warm = [r for r in done[1:] if r["kind"] == kind]
    if warm:
        return float(warm[-1]["wall_s"])
    if not done:
        return 0.0
    cold = _phases(done[0]["cost"])
    extra = cold.get("A/A", 0.0)
    if len(done) > 1:
        extra += max(0.0, cold.get("prepare", 0.0) - _phases(done[-1]["cost"]).get("prepare", 0.0))
    if kind != done[0]["kind"]:
        extra += cold.get("fresh pair", 0.0)
    return max(done[0]["wall_s"] - extra, 0.3 * done[0]["wall_s"])


def record(kind: str, code: int, wall: float, doc: dict, text: str) -> Run:
    """One run, as the tables need it: the ratio rows per case and slot, the cost line, the fresh pair."""
    rows: dict[str, dict[str, dict]] = defaultdict(dict)
    for c in doc.get("comparisons", []):
        if c["metric"] in DECIDED:
            keep = ("verdict", "change_pct", "detects_pct", "threshold_pct", "noise_pct", "note")
            rows["-".join(ab_lab.case_slot(c["case_id"]))][c["metric"]] = {k: c.get(k) for k in keep}
    cost = next((line.split("A/B cost: ", 1)[1] for line in text.splitlines() if "A/B cost: " in line), "")
    fresh = next((m.group(1) for m in re.finditer(r"(\d+) case\(s\) called: measured again", text)), "0")
    ended = re.search(r"the shared comparison ended \(([^)]*)\)", text)
    how = re.search(r"perfgate: A/B: (base and head in one process|a process per tree)[^\n]*", text)
    sharing = f"ended: {ended.group(1)[:100]}" if ended else (how.group(1) if how else "-")
    m = (doc.get("ab") or {}).get("comparisons", "-")
    facts = {"kind": kind, "exit": code, "wall_s": wall, "rows": dict(rows), "cost": cost, "fresh": fresh}
    return {**facts, "sharing": sharing, "m": m}


def run_line(i: int, run: Run) -> str:
    if not run["rows"]:
        why = "cut by the budget" if run["exit"] == 124 else f"exit {run['exit']}, see its log"
        return f"run {i} ({run['kind']}): no results ({why}, {run['wall_s']:.0f} s)"
    verdicts = [r["verdict"] for metrics in run["rows"].values() for r in metrics.values()]
    counts = ", ".join(f"{v} {verdicts.count(v)}" for v in sorted(set(verdicts)))
    return f"run {i} ({run['kind']}): {counts}; fresh pair for {run['fresh']} case(s); {run['wall_s']:.0f} s"


def write(mode: str, runs: list[Run], names: tuple[str, ...], effects: dict[str, dict], wall_s: float) -> list[str]:
    """The tables so far: $OUT/ab_modes_<mode>.md and .json, every log in .tgz."""
    lines = summary(mode, runs, names, effects, wall_s)
    doc = {"mode": mode, "wall_s": wall_s, "spins": effects, "runs": runs}
    (ab_lab.OUT / f"ab_modes_{mode}.json").write_text(json.dumps(doc, indent=1, default=str))
    ab_lab.write_summary(lines)
    return lines


def summary(mode: str, runs: list[Run], names: tuple[str, ...], effects: dict[str, dict], wall_s: float) -> list[str]:
    aa: dict[str, list[str]] = defaultdict(list)  # case -> the verdicts of its A/A comparisons
    trials: dict[str, list[dict]] = defaultdict(list)  # case -> its injected trials, scored
    for run in runs:
        for key, metrics in run["rows"].items():
            name, slot = key.rsplit("-", 1)
            if run["kind"] == "aa" or slot == "0":
                aa[name] += [r["verdict"] for r in metrics.values()]
            else:
                trials[name].append(scored(metrics, effects.get(key, {})))
    done = [r for r in runs if r["rows"]]
    kinds = f"{sum(r['kind'] == 'aa' for r in done)} A/A, {sum(r['kind'] == 'inject' for r in done)} injected"
    lines = [
        f"`perfgate ab --process {mode}`: {len(done)} run(s) with results ({kinds}), {wall_s:.0f} s in all",
        "",
        "| case | one call | A/A called | 2% injected (measured) | caught | A/B change | detects | missed because |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name in names:
        e = next((v for k, v in effects.items() if k.rsplit("-", 1)[0] == name), {})
        mine = trials.get(name, [])
        lines.append(
            f"| {name} | {1000 * e.get('case_ms', float('nan')):.1f} us | {_called(aa[name])} | "
            f"{e.get('measured_pct', float('nan')):+.2f}% | {sum(t['caught'] for t in mine)}/{len(mine)} | "
            f"{', '.join(t['change'] for t in mine)} | {', '.join(t['detects'] for t in mine)} | "
            f"{'; '.join(t['why'] for t in mine if t['why'])} |"
        )
    every = [t for mine in trials.values() for t in mine]
    allowed = [t for t in every if t["allowed"]]
    lines.append(
        f"| **all** | | **{_called([v for vs in aa.values() for v in vs])}** | | "
        f"**{sum(t['caught'] for t in every)}/{len(every)}** | | | |"
    )
    lines += [
        "",
        f"A/A: {_called([v for vs in aa.values() for v in vs])} comparisons called (time and speedup; the A/A "
        "runs' every case and the injected runs' slot 0). Injected: "
        f"{sum(t['caught'] for t in allowed)} of {len(allowed)} trials caught whose detects was within the "
        f"measured injection; {sum(t['caught'] for t in every if not t['allowed'])} of "
        f"{len(every) - len(allowed)} others.",
        "",
    ]
    return lines + run_table(runs)


def scored(metrics: dict[str, dict], effect: dict) -> dict:
    """One injected trial: caught (time or speedup regressed), the A/B's change, what it detects, and for a
    miss why; `allowed`: its noise allows the catch (detects within the measured injection)."""
    caught = any(r["verdict"] == "regressed" for r in metrics.values())
    time_row = metrics.get("median_ms") or next(iter(metrics.values()))
    detects = [r["detects_pct"] for r in metrics.values() if r.get("detects_pct") is not None]
    best = min(detects) if detects else None
    size = effect.get("measured_pct", LEVEL_PCT)
    why = ""
    if not caught:
        verdicts = "/".join(r["verdict"] for r in metrics.values())
        if best is None:
            why = f"{verdicts}: no detects (nothing bounds its process offset)"
        elif best > size:
            why = f"{verdicts}: detects {best:.2f}% > the measured {size:.2f}%"
        else:
            why = f"{verdicts}: detects {best:.2f}% <= {size:.2f}%: a miss 80% power allows"
        offset = re.search(r"process offset [^;]*", time_row.get("note") or "")
        why += f" ({offset.group(0)})" if offset else ""
    change = time_row.get("change_pct")
    return {
        "caught": caught,
        "allowed": best is not None and best <= size,
        "change": f"{change:+.2f}%" if change is not None else "-",
        "detects": f"{best:.2f}%" if best is not None else "-",
        "why": why,
    }


def _called(verdicts: list[str]) -> str:
    return f"{sum(v in CALLS for v in verdicts)}/{len(verdicts)}"


def run_table(runs: list[Run]) -> list[str]:
    """Per run: its comparisons, the fresh pair, whether sharing held, the cost line's phases."""
    lines = [
        "| run | kind | wall | comparisons (m) | fresh pair | sharing | cost (perfgate: A/B cost) |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for i, r in enumerate(runs):
        cost = r["cost"] or ("cut by the budget" if r["exit"] == 124 else f"exit {r['exit']}, no cost line")
        lines.append(
            f"| {i} | {r['kind']} | {r['wall_s']:.0f} s | {r['m']} | {r['fresh']} case(s) | {r['sharing']} | {cost} |"
        )
    for kind in ("inject", "aa"):
        costs = [_phases(r["cost"]) for r in runs if r["kind"] == kind and r["cost"]]
        if costs:
            phases = list(dict.fromkeys(p for c in costs for p in c))
            median = ", ".join(f"{p} {statistics.median(c.get(p, 0.0) for c in costs):.1f} s" for p in phases)
            lines += ["", f"median cost of the {len(costs)} {kind} run(s): {median}"]
    return lines


def _phases(cost: str) -> dict[str, float]:
    """`worktree 0.1 s, start 2.9 s, ..., total 6.6 s` -> {phase: seconds}."""
    out = {}
    for part in cost.split(", "):
        m = re.fullmatch(r"(.+) (\d+(?:\.\d+)?) s", part.strip())
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


if __name__ == "__main__":
    main()
