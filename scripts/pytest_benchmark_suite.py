"""Run a real pytest-benchmark suite from another project, unchanged, under `pytest --perfgate` and under
pytest-benchmark's own `--benchmark-compare-fail`, side by side: false alarms on unchanged runs, and a
+30% regression injected into the library under test (scripts/cattrs_slowdown.py).

The suite is cattrs' `bench/` (python-attrs/cattrs at a given commit; nothing of it is committed here).
What a user would do, step by step, all on the host clock:
  1. a separate virtualenv with cattrs' needs, pytest-benchmark and perfgate (this checkout, editable);
  2. `perfgate calibrate --reason ... -- bench` (its default 10 fresh processes) -> the calibrated baseline;
     `pytest bench --benchmark-save=base` -> pytest-benchmark's baseline;
  3. ROUNDS rounds, in this order: perfgate unchanged, pytest-benchmark unchanged, perfgate slowed,
     pytest-benchmark slowed; perfgate runs `pytest --perfgate` (its confirmation in fresh processes
     included), pytest-benchmark runs `pytest bench --benchmark-compare=0001 --benchmark-compare-fail=mean:10%`.
The slowdown: every case's calls get 30% of the case's calibrated median added (cattrs' structure and
unstructure bodies plus a busy loop); the achieved slowdown is measured and reported per tool.

    python scripts/pytest_benchmark_suite.py --source https://github.com/python-attrs/cattrs \\
        --commit 82b02c07ca535a1ba656b935767d819eac9d383b --work /tmp/cattrs-bench --rounds 3 \\
        --out docs/evidence/data/host/pytest-benchmark-suite-cattrs.json
    python scripts/pytest_benchmark_suite.py --summarize \
        --out docs/evidence/data/host/pytest-benchmark-suite-cattrs.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
SUITE = "bench"
SLOWDOWN = 0.30
COMPARE_FAIL = "mean:10%"
NEEDS = ["attrs", "typing-extensions", "msgspec", "orjson", "pytest", "pytest-benchmark", "numpy"]
TIMEOUT_S = 3600


def sh(argv: list[str], cwd: Path, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> str:
    t0 = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    print(f"  [{time.monotonic() - t0:6.1f} s, exit {done.returncode}] {' '.join(argv[:8])}", flush=True)
    if done.returncode not in ok:
        raise SystemExit(f"failed ({done.returncode}): {argv}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr


def checkout(source: str, commit: str, work: Path) -> Path:
    tree = work / "suite"
    if not tree.exists():
        sh(["git", "clone", "--quiet", "--no-checkout", source, str(tree)], cwd=work)
    sh(["git", "checkout", "--quiet", "--force", commit], cwd=tree)
    sh(["git", "clean", "-qfdx"], cwd=tree)
    return tree


def virtualenv(work: Path) -> Path:
    venv = work / "venv"
    if not venv.exists():
        sh([sys.executable, "-m", "venv", str(venv)], cwd=work)
        sh([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *NEEDS], cwd=work)
        sh([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(ROOT)], cwd=work)
    return venv


def environment(tree: Path, slowdown_json: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PERFGATE_", "GITHUB_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), str(SCRIPTS)])
    if slowdown_json is not None:
        env["PYTEST_ADDOPTS"] = "-p cattrs_slowdown"
        env["CATTRS_SLOWDOWN_JSON"] = str(slowdown_json)
    return env


def perfgate_run(venv: Path, tree: Path, env: dict[str, str], out: Path, *extra: str) -> dict[str, object]:
    text = sh(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pytest",
            SUITE,
            "-q",
            "-p",
            "no:cacheprovider",
            "--perfgate",
            "--perfgate-no-store",
            "--perfgate-json",
            str(out),
            *extra,
        ],
        cwd=tree,
        env=env,
        ok=(0, 1),
    )
    doc = json.loads(out.read_text())
    time_rows = [c for c in doc["comparisons"] if c["metric"] in ("time", "median_ms")]
    verdicts = [c["verdict"] for c in time_rows]
    medians = {c["case_id"]: c["timing"]["median_ms"] for c in doc["cases"]}
    fastest = {c["case_id"]: c["timing"]["min_ms"] for c in doc["cases"]}
    warning = next((line for line in text.splitlines() if "not used under --perfgate" in line), "")
    regressed = sorted(c["case_id"] for c in time_rows if c["verdict"] == "regressed")
    return {
        "cases": len(time_rows),
        "regressed": regressed,
        "inconclusive": verdicts.count("inconclusive"),
        "improved": verdicts.count("improved"),
        "unchanged": verdicts.count("unchanged"),
        "medians_ms": medians,
        "min_ms": fastest,
        "warning": warning,
    }


FAIL_LINE = re.compile(r"^\t(?P<name>\S+) .* - Field 'mean' has failed PercentageRegressionCheck")


def pytest_benchmark_run(venv: Path, tree: Path, env: dict[str, str], out: Path) -> dict[str, object]:
    text = sh(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pytest",
            SUITE,
            "-q",
            "-p",
            "no:cacheprovider",
            "--benchmark-compare=0001",
            f"--benchmark-compare-fail={COMPARE_FAIL}",
            "--benchmark-json",
            str(out),
        ],
        cwd=tree,
        env=env,
        ok=(0, 1),
    )
    failed = sorted({m["name"] for m in map(FAIL_LINE.match, text.splitlines()) if m})
    benchmarks = json.loads(out.read_text())["benchmarks"]
    means = {b["fullname"]: b["stats"]["mean"] * 1e3 for b in benchmarks}
    medians = {b["fullname"]: b["stats"]["median"] * 1e3 for b in benchmarks}
    return {"cases": len(means), "failed": failed, "means_ms": means, "medians_ms": medians}


def saved_stats(tree: Path) -> dict[str, dict[str, float]]:
    """pytest-benchmark's saved baseline (0001_base.json): mean and median per case, ms."""
    saved = sorted((tree / ".benchmarks").glob("*/0001_base.json"))
    assert len(saved) == 1, saved
    benchmarks = json.loads(saved[0].read_text())["benchmarks"]
    return {stat: {b["fullname"]: b["stats"][stat] * 1e3 for b in benchmarks} for stat in ("mean", "median")}


PROBE_NS_PER_LOOP = 10.0  # a first guess of one busy-loop iteration, for the probe's length only


def size_slowdown(venv: Path, tree: Path, work: Path, base_ms: dict[str, float]) -> Path:
    """Loop lengths giving each case +SLOWDOWN over its calibrated median. Three perfgate runs: without the
    plugin, with it and empty loops, with a probe length. The fastest call of each (not the median: on a
    loaded machine a call of a few ms is often preempted, and its median with it) gives what the plugin's
    empty loops cost and what one iteration costs in that case (nested structures run the loop once per
    element); loops = (SLOWDOWN x median - empty loops' cost) / one iteration's cost."""
    table = work / "slowdown.json"
    probe = {cid: max(20, round(SLOWDOWN * ms * 1e6 / PROBE_NS_PER_LOOP)) for cid, ms in base_ms.items()}
    fastest = []
    for name, loops in (("plain", None), ("empty", {cid: 0 for cid in base_ms}), ("probe", probe)):
        if loops is not None:
            table.write_text(json.dumps(loops, indent=1))
        run = perfgate_run(
            venv,
            tree,
            environment(tree, table if loops is not None else None),
            work / f"sizing-{name}.json",
            "--perfgate-confirm-runs",
            "0",
        )
        fastest.append(run["min_ms"])
    plain, empty, probed = fastest
    sized = {}
    for cid, ms in base_ms.items():
        per_loop_ms = (probed[cid] - empty[cid]) / probe[cid]
        overhead_ms = max(0.0, empty[cid] - plain[cid])
        sized[cid] = max(0, round((SLOWDOWN * ms - overhead_ms) / per_loop_ms)) if per_loop_ms > 0 else probe[cid]
    table.write_text(json.dumps(sized, indent=1))
    return table


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", default="https://github.com/python-attrs/cattrs", help="git URL or path of cattrs")
    p.add_argument("--commit", help="the cattrs commit to run")
    p.add_argument("--work", type=Path, help="scratch directory (the suite, the venv, outputs)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--calibrate-runs", type=int, default=10, help="perfgate calibrate --runs (its default: 10)")
    p.add_argument("--out", type=Path, required=True, help="write the numbers here (JSON)")
    p.add_argument("--summarize", action="store_true", help="only print the summary of --out, written before")
    args = p.parse_args()
    if args.summarize:
        summarize(json.loads(args.out.read_text()))
        return 0
    if not args.commit or not args.work:
        p.error("--commit and --work are needed to run the suite")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    tree = checkout(args.source, args.commit, work)
    venv = virtualenv(work)
    plain = environment(tree, None)
    python = str(venv / "bin" / "python")
    print("calibrating perfgate and saving pytest-benchmark's baseline", flush=True)
    calibrate = sh(
        [
            str(venv / "bin" / "perfgate"),
            "calibrate",
            "--runs",
            str(args.calibrate_runs),
            "--no-store",
            "--reason",
            "cattrs bench, unchanged",
            "--",
            SUITE,
        ],
        cwd=tree,
        env=plain,
    )
    baselines = sorted((tree / "baselines").glob("*.json"))
    assert len(baselines) == 1, baselines
    baseline = json.loads(baselines[0].read_text())
    shutil.rmtree(tree / ".benchmarks", ignore_errors=True)
    sh([python, "-m", "pytest", SUITE, "-q", "-p", "no:cacheprovider", "--benchmark-save=base"], cwd=tree, env=plain)
    base_ms = {cid: c["median_ms"] for cid, c in baseline["cases"].items()}
    slowdown_json = size_slowdown(venv, tree, work, base_ms)
    slowed = environment(tree, slowdown_json)
    rounds = []
    for r in range(args.rounds):
        print(f"round {r + 1} of {args.rounds}", flush=True)
        rounds.append(
            {
                "perfgate_unchanged": perfgate_run(venv, tree, plain, work / f"pg-unchanged-{r}.json"),
                "pytest_benchmark_unchanged": pytest_benchmark_run(venv, tree, plain, work / f"pb-unchanged-{r}.json"),
                "perfgate_slowed": perfgate_run(venv, tree, slowed, work / f"pg-slowed-{r}.json"),
                "pytest_benchmark_slowed": pytest_benchmark_run(venv, tree, slowed, work / f"pb-slowed-{r}.json"),
            }
        )
    doc = {
        "suite": f"{args.source} {SUITE}/",
        "commit": args.commit,
        "perfgate_commit": sh(["git", "rev-parse", "HEAD"], cwd=ROOT).strip(),
        "packages": sh([python, "-m", "pip", "freeze", "--exclude-editable"], cwd=work).split(),
        "calibrate_tail": calibrate.strip().splitlines()[-3:],
        "cpus": os.cpu_count(),
        "load_average_1m": [load_before[0], os.getloadavg()[0]],
        "slowdown": SLOWDOWN,
        "compare_fail": COMPARE_FAIL,
        "baseline_medians_ms": {cid: c["median_ms"] for cid, c in baseline["cases"].items()},
        "baseline_thresholds_pct": {cid: c.get("threshold_pct") for cid, c in baseline["cases"].items()},
        "pytest_benchmark_saved_ms": saved_stats(tree),
        "rounds": rounds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    summarize(doc)
    return 0


def summarize(doc: dict) -> None:
    """One line per round: cases flagged on the unchanged and the slowed run, by perfgate and by
    pytest-benchmark's compare-fail on the mean (its run) and on the median (the same rule, computed from
    its JSON), and the median slowdown each tool measured."""
    base_pg, saved = doc["baseline_medians_ms"], doc["pytest_benchmark_saved_ms"]

    def over_10pct(run: dict, stat: str) -> int:
        return sum(1 for c, v in run[f"{stat}s_ms"].items() if v / saved[stat][c] - 1 > 0.10)

    for i, r in enumerate(doc["rounds"], 1):
        pgu, pbu, pgs, pbs = (
            r[k]
            for k in ("perfgate_unchanged", "pytest_benchmark_unchanged", "perfgate_slowed", "pytest_benchmark_slowed")
        )
        seen_pg = statistics.median(pgs["medians_ms"][c] / base_pg[c] - 1 for c in base_pg)
        seen_pb = statistics.median(pbs["medians_ms"][c] / pbu["medians_ms"][c] - 1 for c in pbs["medians_ms"])
        print(
            f"round {i}: unchanged: perfgate {len(pgu['regressed'])}/{pgu['cases']} regressed, pytest-benchmark "
            f"mean:10% {len(pbu['failed'])}/{pbu['cases']} (median:10% {over_10pct(pbu, 'median')}); "
            f"+{doc['slowdown']:.0%} injected (median change seen: perfgate {seen_pg:+.1%}, pytest-benchmark "
            f"{seen_pb:+.1%}): perfgate {len(pgs['regressed'])}/{pgs['cases']} caught, pytest-benchmark mean:10% "
            f"{len(pbs['failed'])}/{pbs['cases']} (median:10% {over_10pct(pbs, 'median')})"
        )


if __name__ == "__main__":
    raise SystemExit(main())
