"""Issue 31 req 5 on the H100: baseline mode with the cycle metric, on time-only GEMMs, over independent calibrations.

    source .device-env/setup.sh && python3 lab/gpu/cycles_session.py --gpus 4 --budget-s 480
    python3 lab/gpu/cycles_session.py --host --gpus 2 --budget-s 300     # the plumbing, on the CPU (no GPU)
    python3 lab/gpu/cycles_session.py --report DIR                        # the tables again, from a finished DIR

Each experiment (one per GPU, run side by side with CUDA_VISIBLE_DEVICES; with fewer GPUs than --experiments,
one after the other) builds a throwaway git project (branch main) holding lab/gpu/cycles_cases.py: a cuBLAS
bf16 8192^3 GEMM and the kernel suite's Triton 4096^2 matmul, both time-only with `flops` declared (gated in
SM cycles), and a 1 GiB copy with `bytes_moved` (gated on time). Then, as a user would, with shipped defaults
(plus pin_autotune):

1. `perfgate calibrate --runs 6`: an independent calibration (its baseline says what each case detects in
   time and in cycles, from the same processes);
2. the injected slowdowns' size, MEASURED: per case and level, a spin of N SM cycles after the work, N sized
   from the case's own cycles and corrected once, measured in one process against the case with a 0-cycle
   spin, interleaved (the time and the cycles it adds: the effect reported, not the nominal level);
3. --aa-runs unchanged `pytest --perfgate` runs (stored on main: they feed the noise window);
4. --inject-runs runs per level with every case slowed by its measured spin (--perfgate-no-store: a missed
   slowdown does not join the window), confirmation processes as shipped.

Printed (lines `cycles-lab:`) and written to $OUT/cycles_session.md, with every log, baseline and JSON in
$OUT/cycles_session.tgz: per experiment and case the gated measure, the calibration's spread and detects in
time and in cycles, A/A false alarms (runs failed per calibration too), caught at each level with the measured
effect, and the clock: the probe's SM clock over the processes and the share of NVML polls under a cap.
New runs start only while --budget-s lasts (each experiment's steps are cut, in order, when it runs out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
OUT = Path(os.environ.get("OUT", "gpu-results"))
SCRATCH = Path(tempfile.gettempdir()) / "perfgate-cycles-lab"
CASES = ("cublas_gemm", "triton_matmul", "copy")
STEP_LIMIT_S = 420.0

TEST_FILE = """
import pytest

from cycles_cases import CASES, SPIN, with_spin


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(perfgate, name):
    fn, args, work = CASES[name]()
    perfgate.measure(with_spin(fn, SPIN.get(name, 0)), args, **work)
"""
CONFTEST = """
from pathlib import Path

import cycles_cases


def pytest_configure(config):
    if cycles_cases.HOST:  # each process draws its SM clock from a power-cap-like range, deterministically
        counter = Path(str(config.rootpath)) / ".processes"
        n = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(n + 1))
        cycles_cases.install_host(1410.0 + (n * 7919) % 571)
"""
PYPROJECT = """
[tool.perfgate]
pin_autotune = true
"""


def log(line: str, logfile: Path | None = None) -> None:
    print(f"cycles-lab: {line}", flush=True)
    if logfile is not None:
        with open(logfile, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def run(argv: list[str], cwd: Path, env: dict[str, str], name: str, logs: Path, limit_s: float) -> int:
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=max(1.0, limit_s))
        code, text = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as err:
        code, text = 124, str(err.stdout or "")
    (logs / f"{name}.log").write_text(text)
    log(f"{name}: exit {code}, {time.monotonic() - started:.1f} s", logs / "steps.log")
    return code


def new_project(path: Path, host: bool) -> None:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    if not host:
        shutil.copytree(ROOT / "kernels", path / "kernels", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    shutil.copy2(HERE / "cycles_cases.py", path / "cycles_cases.py")
    (path / "test_cycles_lab.py").write_text(TEST_FILE)
    (path / "conftest.py").write_text(CONFTEST)
    (path / "pyproject.toml").write_text(PYPROJECT)
    (path / ".gitignore").write_text(".perfgate/\n__pycache__/\n.processes\n.host-mhz\n")
    for argv in (
        ["init", "-q", "-b", "main"],
        ["config", "user.email", "lab@perfgate"],
        ["config", "user.name", "perfgate lab"],
        ["config", "commit.gpgsign", "false"],
        ["add", "-A"],
        ["commit", "-q", "-m", "cycles lab"],
    ):
        subprocess.run(["git", "-C", str(path), *argv], capture_output=True, timeout=60, check=True)


def experiment(k: int, args: argparse.Namespace, deadline: float) -> None:
    """One independent calibration and its gate runs, in SCRATCH/exp<k> (logs, baseline and JSON kept there)."""
    project = SCRATCH / f"exp{k}" / "project"
    logs = SCRATCH / f"exp{k}" / "logs"
    new_project(project, args.host)
    logs.mkdir(parents=True, exist_ok=True)
    env = {k_: v for k_, v in os.environ.items() if k_ not in ("PERFGATE_DB", "GITHUB_STEP_SUMMARY")}
    env.update(PYTHONUNBUFFERED="1", PYTEST_ADDOPTS="-p no:cacheprovider -p no:randomly", PERFGATE_PROGRESS="log")
    env.update(
        CYCLES_LAB_TESTS=str(ROOT / "tests"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(project), env.get("PYTHONPATH")])),
    )
    if args.host:
        env["CYCLES_LAB_HOST"] = "1"

    def left() -> float:
        return deadline - time.monotonic()

    py = sys.executable
    calibrate = [py, "-m", "perfgate", "calibrate", "--runs", str(args.calibration_runs), "--reason", f"cycles lab {k}"]
    if run(calibrate, project, env, "calibrate", logs, min(STEP_LIMIT_S, left())) != 0:
        return
    shutil.copytree(project / "baselines", logs / "baselines", dirs_exist_ok=True)
    levels = [float(x) for x in args.levels.split(",")]
    effects_json = logs / "effects.json"
    effect_argv = [py, str(Path(__file__).resolve()), "--effects", str(effects_json), "--levels", args.levels]
    if run(effect_argv, project, env, "effects", logs, min(STEP_LIMIT_S, left())) != 0:
        return
    effects = json.loads(effects_json.read_text())
    gate = [py, "-m", "pytest", "--perfgate", "test_cycles_lab.py"]
    for i in range(args.aa_runs):
        if left() < args.run_s:
            log(f"exp{k}: out of time after {i} A/A run(s)", logs / "steps.log")
            break
        run([*gate, "--perfgate-json", str(logs / f"aa_{i:02d}.json")], project, env, f"aa_{i:02d}", logs, left())
    for i in range(args.inject_runs):
        for level in levels:
            if left() < 2 * args.run_s:
                log(f"exp{k}: out of time before injected run {i} at {level:g}%", logs / "steps.log")
                return
            spin = {case: effects[case][f"{level:g}"]["cycles"] for case in effects}
            name = f"inject_{level:g}_{i:02d}"
            argv = [*gate, "--perfgate-no-store", "--perfgate-json", str(logs / f"{name}.json")]
            run(argv, project, {**env, "CYCLES_LAB_SPIN": json.dumps(spin)}, name, logs, left())


def measure_effects(out: Path, levels: list[float]) -> None:
    """In the project (cwd): per case and level, the spin's cycles and what it adds, in time and in cycles (its
    median against the case with a 0-cycle spin, interleaved in this one process)."""
    sys.path.insert(0, os.getcwd())
    import cycles_cases as cc

    from perfgate.config.settings import MeasureOptions
    from perfgate.measure import gpu_state
    from perfgate.measure.sm_clock import cycle_stats, probe_for
    from perfgate.measure.timer import measure_calls
    from perfgate.model import Timer

    if cc.HOST:
        cc.install_host(1980.0)
    timer = Timer.HOST if cc.HOST else Timer.CUDA_EVENT
    device = None
    if not cc.HOST:  # by UUID: NVML numbers every GPU, CUDA_VISIBLE_DEVICES only the visible ones
        import torch

        from perfgate.measure.environment import _uuid

        device = gpu_state.open_device(_uuid(torch.cuda.get_device_properties(torch.cuda.current_device())))
    options = MeasureOptions(warmup_ms=25, min_samples=40, max_samples=200, budget_ms=600, memory=False)

    def medians(calls: list[Any]) -> list[tuple[float, float]]:
        m = measure_calls(calls, options, timer, device, probe=probe_for(timer))
        stats = [cycle_stats(s, c) for s, c in zip(m.samples_ms, m.clocks_mhz)]
        return [(statistics.median(s), c.median_mcycles if c else float("nan")) for s, c in zip(m.samples_ms, stats)]

    result: dict[str, dict[str, Any]] = {}
    for name, build in cc.CASES.items():
        fn, args, _ = build()
        base = cc.with_spin(fn, 0)
        base(*args)
        ((_, mcycles),) = medians([lambda b=base, a=args: b(*a)])
        result[name] = {"mcycles": mcycles}
        for level in levels:
            n = int(level / 100 * mcycles * 1e6)
            for _ in range(2):  # sized from the case's cycles, then corrected once by what it measured
                slow = cc.with_spin(fn, n)
                (t0, c0), (t1, c1) = medians([lambda b=base, a=args: b(*a), lambda s=slow, a=args: s(*a)])
                measured = 100 * (c1 / c0 - 1)
                entry = {"cycles": n, "time_pct": round(100 * (t1 / t0 - 1), 3), "cycles_pct": round(measured, 3)}
                n = int(n * level / measured) if measured > 0 else n
            result[name][f"{level:g}"] = entry
    out.write_text(json.dumps(result, indent=1))


# --- scoring ----------------------------------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def _rows(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["case_id"].split("[")[-1].rstrip("]"), c["metric"]): c for c in doc["comparisons"]}


def _gated(rows: dict[tuple[str, str], dict[str, Any]], case: str) -> dict[str, Any] | None:
    return next(
        (rows[case, m] for m in ("median_mcycles", "median_ms") if (case, m) in rows and rows[case, m]["gated"]), None
    )


def _spread(values: list[float]) -> float:
    return 100 * (max(values) - min(values)) / statistics.mean(values) if values else float("nan")


def score_experiment(exp: Path) -> dict[str, Any]:
    logs = exp / "logs"
    baseline_file = next((logs / "baselines").glob("*.json"), None)
    if baseline_file is None:
        return {}
    baseline = _load(baseline_file)["cases"]
    effects = _load(logs / "effects.json") if (logs / "effects.json").exists() else {}
    aa = [_load(p) for p in sorted(logs.glob("aa_*.json"))]
    injected = {p.stem: _load(p) for p in sorted(logs.glob("inject_*.json"))}
    out: dict[str, Any] = {"aa_runs": len(aa), "aa_failed": sum(d["gate"]["failed"] for d in aa), "cases": {}}
    for case in CASES:
        cid = next((c for c in baseline if c.endswith(f"[{case}]")), None)
        if cid is None:
            continue
        b = baseline[cid]
        entry: dict[str, Any] = {
            "calibration_spread_time_pct": _spread(b.get("process_medians_ms", [])),
            "calibration_spread_cycles_pct": _spread(b.get("process_mcycles", [])),
            "detects_time_pct": b.get("threshold_pct"),
            "detects_cycles_pct": b.get("mcycles_threshold_pct"),
        }
        gated = [_gated(_rows(d), case) for d in aa]
        entry["gated"] = sorted({g["metric"] for g in gated if g})
        entry["aa_alarms"] = sum(bool(g and g["verdict"] == "regressed") for g in gated)
        entry["aa_detects_pct"] = [g["detects_pct"] for g in gated if g and g["detects_pct"] is not None]
        entry["levels"] = {}
        for stem, doc in injected.items():
            level = stem.split("_")[1]
            g = _gated(_rows(doc), case)
            time_row = _rows(doc).get((case, "median_ms"))
            lv = entry["levels"].setdefault(
                level, {"caught": 0, "runs": 0, "time_verdicts": [], "effect": effects.get(case, {}).get(level)}
            )
            lv["runs"] += 1
            lv["caught"] += bool(g and g["verdict"] == "regressed")
            lv["time_verdicts"].append(time_row["verdict"] if time_row else None)
        entry["clock"] = _clock_stats([*aa, *injected.values()], case)
        out["cases"][case] = entry
    return out


def _clock_stats(docs: list[dict[str, Any]], case: str) -> dict[str, Any]:
    clocks, lows, capped = [], [], []
    for d in docs:
        for r in d.get("cases", []):
            if r["case_id"].endswith(f"[{case}]"):
                if r.get("cycles"):
                    clocks.append(r["cycles"]["clock_median_mhz"])
                    lows.append(r["cycles"]["clock_min_mhz"])
                if r.get("gpu_state"):
                    capped.append(r["gpu_state"]["throttled_fraction"])
    return {
        "processes": len(clocks),
        "clock_median_mhz": [min(clocks), max(clocks)] if clocks else None,
        "clock_min_mhz": min(lows) if lows else None,
        "polls_capped_pct": round(100 * statistics.mean(capped), 1) if capped else None,
        "processes_capped": sum(c > 0 for c in capped),
    }


def _pct(x: Any) -> str:
    return "-" if x is None or x != x else f"{x:.2f}%"


HEADER = (
    "| exp | case | gated | cal. spread time / cycles | detects time / cycles (cal.) | detects, gated (A/A) "
    "| A/A alarms | caught, gated (measured effect: time, cycles), time row | SM clock (probe) | NVML polls capped |"
)


def _caught(levels: dict[str, Any]) -> str:
    cells = []
    for lv, v in sorted(levels.items(), key=lambda kv: float(kv[0])):
        effect = v.get("effect")
        measured = f" ({effect['time_pct']:+.2f}%, {effect['cycles_pct']:+.2f}%)" if effect else ""
        time_caught = sum(t == "regressed" for t in v["time_verdicts"])
        cells.append(f"{lv}%: {v['caught']}/{v['runs']}{measured}, time row {time_caught}/{v['runs']}")
    return "; ".join(cells) or "-"


def _clock(ck: dict[str, Any]) -> tuple[str, str]:
    clock = "-"
    if ck["clock_median_mhz"]:
        low, high = ck["clock_median_mhz"]
        clock = f"{low:.0f}-{high:.0f} MHz (min {ck['clock_min_mhz']:.0f})"
    capped = "-" if ck["polls_capped_pct"] is None else f"{ck['polls_capped_pct']}%"
    return clock, f"{capped} ({ck['processes_capped']}/{ck['processes']} processes)"


def render(scored: dict[str, dict[str, Any]]) -> list[str]:
    lines = [HEADER, "|---|---|---|---|---|---|---|---|---|---|"]
    for exp, s in sorted(scored.items()):
        for case, e in s.get("cases", {}).items():
            clock, capped = _clock(e["clock"])
            gated = ",".join(g.replace("median_", "") for g in e["gated"]) or "-"
            spread = f"{_pct(e['calibration_spread_time_pct'])} / {_pct(e['calibration_spread_cycles_pct'])}"
            detects = f"{_pct(e['detects_time_pct'])} / {_pct(e['detects_cycles_pct'])}"
            aa = e["aa_detects_pct"]
            aa_detects = f"{_pct(min(aa))}-{_pct(max(aa))}" if aa else "-"
            lines.append(
                f"| {exp} | {case} | {gated} | {spread} | {detects} | {aa_detects} | {e['aa_alarms']}/{s['aa_runs']} | "
                f"{_caught(e['levels'])} | {clock} | {capped} |"
            )
    lines.append("")
    lines += [
        f"- {exp}: unchanged gate runs failed {s.get('aa_failed', 0)}/{s.get('aa_runs', 0)}"
        for exp, s in sorted(scored.items())
    ]
    return lines


def report(scratch: Path) -> list[str]:
    scored = {exp.name: score_experiment(exp) for exp in sorted(scratch.glob("exp*")) if (exp / "logs").is_dir()}
    lines = render({k: v for k, v in scored.items() if v})
    (scratch / "scores.json").write_text(json.dumps(scored, indent=1))
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", type=int, default=1, help="experiments run side by side, one per GPU")
    p.add_argument("--experiments", type=int, help="independent calibrations (default: max(2, --gpus))")
    p.add_argument("--calibration-runs", type=int, default=6)
    p.add_argument("--aa-runs", type=int, default=6)
    p.add_argument("--inject-runs", type=int, default=3)
    p.add_argument("--levels", default="3,5")
    p.add_argument("--budget-s", type=float, default=480.0, help="no new run starts after this")
    p.add_argument(
        "--run-s", type=float, default=25.0, help="what one gate run may take (a run starts only if it fits)"
    )
    p.add_argument("--host", action="store_true", help="the plumbing on the CPU, with a stand-in SM")
    p.add_argument("--worker", help=argparse.SUPPRESS)  # comma-separated experiment numbers, run in order
    p.add_argument("--effects", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--report", type=Path, help="score a finished scratch directory again")
    args = p.parse_args()
    if args.effects:
        measure_effects(args.effects, [float(x) for x in args.levels.split(",")])
        return 0
    deadline = time.monotonic() + args.budget_s
    if args.worker is not None:
        for k in (int(x) for x in args.worker.split(",")):
            experiment(k, args, deadline)
        return 0
    if args.report:
        print("\n".join(report(args.report)))
        return 0
    return parent(args)


def parent(args: argparse.Namespace) -> int:
    """One worker process per GPU (CUDA_VISIBLE_DEVICES), each running its share of the experiments."""
    started = time.monotonic()
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    n = args.experiments or max(2, args.gpus)
    shares = [list(range(g, n, args.gpus)) for g in range(args.gpus)]
    passed = _without(sys.argv[1:], ("--gpus", "--experiments"))
    workers = []
    for g, share in enumerate(shares):
        if not share:
            continue
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(g)}
        argv = [sys.executable, str(Path(__file__).resolve()), *passed, "--worker", ",".join(map(str, share))]
        workers.append(subprocess.Popen(argv, env=env))
        log(f"GPU {g}: experiment(s) {share}")
    for w in workers:  # a run started before the deadline ends at it (run()'s timeout): this is a backstop
        try:
            w.wait(timeout=max(1.0, args.budget_s + 60 - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait(timeout=30)
    lines = report(SCRATCH)
    lines.append(f"\nwall {time.monotonic() - started:.0f} s, {n} experiment(s) on {args.gpus} GPU(s)")
    for line in lines:
        log(line)
    (OUT / "cycles_session.md").write_text("\n".join(lines) + "\n")
    with tarfile.open(OUT / "cycles_session.tgz", "w:gz") as tar:
        for exp in sorted(SCRATCH.glob("exp*")):
            tar.add(exp / "logs", arcname=f"cycles_session/{exp.name}")
        tar.add(SCRATCH / "scores.json", arcname="cycles_session/scores.json")
    return 0


def _without(argv: list[str], names: tuple[str, ...]) -> list[str]:
    """argv less the named options and their values (the workers get their own)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in names:
            skip = True
            continue
        if not any(a.startswith(f"{n}=") for n in names):
            out.append(a)
    return out


if __name__ == "__main__":
    sys.exit(main())
