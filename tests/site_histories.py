"""Histories for the dashboard and the change points: one from real H100 recordings, one synthetic at scale.
Shared by the tests and scripts/site_bench.py (importable helpers, not a test module).

The recorded history is GPU session A2's (docs/evidence/data/h100/gallery/history.db.gz: six calibration processes,
a gate, a de-tuned gate whose softmax regressed, a profiled gate) followed by session C's accuracy
processes (docs/evidence/data/h100/accuracy_c_process_medians.json): for ten more cases, six calibration processes,
eighteen unchanged processes and four with an injected 5% slowdown, each stored as a run. Those runs carry
only the recorded process medians (one sample each), and their commits are labels that say what they are.
"""

from __future__ import annotations

import gzip
import json
import shutil
import statistics
from pathlib import Path
from typing import Any

from perfgate.model import CaseResult, CaseThresholds, Environment, Run, RunInfo, Speedup, Timer, TimingStats
from perfgate.store import open_store

ROOT = Path(__file__).resolve().parents[1]
H100 = ROOT / "docs" / "evidence" / "data" / "h100"
GALLERY = H100 / "gallery"
ACCURACY_PREFIX = "accuracy/session_c.py::"
SLOWED = "5"  # the injected slowdown (percent) whose processes follow the unchanged ones


def single_median_case(
    case_id: str,
    median_ms: float,
    speedup: float | None = None,
    reference: str = "",
    thresholds: CaseThresholds = CaseThresholds(),
) -> CaseResult:
    """A case known by one process median only (recorded accuracy processes keep nothing else)."""
    timing = TimingStats(Timer.CUDA_EVENT, 1, median_ms, median_ms, 0.0, median_ms, median_ms, median_ms, median_ms)
    s = Speedup(reference, (), speedup, speedup, speedup) if speedup is not None else None
    return CaseResult(case_id, timing, (median_ms,), speedup=s, thresholds=thresholds, nodeid=case_id)


def _accuracy_runs(env: Environment) -> list[tuple[str, Run]]:
    data = json.loads((H100 / "accuracy_c_process_medians.json").read_text())
    phases = [("calibration", p, "-0") for p in data["calibration"]] + [("unchanged", p, "-0") for p in data["aa"]]
    phases += [(f"slowed {SLOWED}%", p, f"-{SLOWED}") for p in data["injected"]]
    runs = []
    for i, (phase, processes, suffix) in enumerate(phases):
        results = tuple(
            single_median_case(ACCURACY_PREFIX + key[: -len(suffix)], v[0], v[1], "torch" if v[1] is not None else "")
            for key, v in sorted(processes.items())
            if key.endswith(suffix)
        )
        commit = {"calibration": "c-calibrated", "unchanged": "c-unchanged"}.get(phase, f"c-slowed-{SLOWED}%")
        argv = "perfgate calibrate --runs 6" if phase == "calibration" else "pytest --perfgate"
        info = RunInfo(
            f"2026-11-23T{8 + i // 60:02d}:{i % 60:02d}:00+00:00",
            "",
            git_commit=commit,
            git_branch="main",
            argv=argv,
            run_uid=f"accuracy-c-{i}",
        )
        runs.append((phase, Run(info, env, results)))
    return runs


def accuracy_baseline_cases() -> dict[str, Any]:
    """Baseline entries (file format) for the accuracy cases: their six calibration processes."""
    data = json.loads((H100 / "accuracy_c_process_medians.json").read_text())
    out: dict[str, Any] = {}
    for key in sorted(data["calibration"][0]):
        if not key.endswith("-0"):
            continue
        times = [p[key][0] for p in data["calibration"]]
        speedups = [p[key][1] for p in data["calibration"] if p[key][1] is not None]
        entry: dict[str, Any] = {
            "timer": "cuda_event",
            "median_ms": statistics.median(times),
            "samples_ms": times,
            "process_medians_ms": times,
        }
        if len(speedups) == len(times):
            entry["process_speedups"] = speedups
        out[ACCURACY_PREFIX + key[:-2]] = entry
    return out


def recorded_h100_history(db: Path, baseline_dir: Path) -> tuple[Path, Path]:
    """The recorded H100 history and its baseline directory (gallery baseline + the accuracy cases)."""
    with gzip.open(GALLERY / "history.db.gz") as fin, db.open("wb") as fout:
        shutil.copyfileobj(fin, fout)
    with open_store(db) as store:
        env = store.load_run(1).environment
        for _, run in _accuracy_runs(env):
            store.save_run(run)
    baseline = json.loads((GALLERY / "baseline.json").read_text())
    baseline["cases"].update(accuracy_baseline_cases())
    baseline_dir.mkdir(parents=True, exist_ok=True)
    path = baseline_dir / "nvidia-h100-80gb-hbm3.json"
    path.write_text(json.dumps(baseline, indent=1))
    return db, baseline_dir


def synthetic_history(db: Path, baseline_dir: Path, cases: int, runs: int, seed: int = 0) -> tuple[Path, Path]:
    """`cases` x `runs` on one H100: log-uniform medians with 0.5% process noise, a tenth bimodal (a third of
    the processes 2% slower), one in twenty a +3% step somewhere after run 300 (or a third of the way), half
    with a speedup against a reference, all with peak memory and GPU state, every tenth with an autotune
    choice. The first six runs are calibration processes and make the calibrated baseline."""
    import numpy as np

    from perfgate.baseline.write import calibrated_baseline, write_baseline
    from perfgate.config.settings import Settings
    from perfgate.metrics import PEAK_ALLOCATED
    from perfgate.model import GpuState, Metric
    from perfgate.stats import summarize

    rng = np.random.default_rng(seed)
    env = Environment(device_kind="cuda", device_name="NVIDIA H100 80GB HBM3", compute_capability="9.0")
    ids = [f"suite/test_ops_{i // 100:02d}.py::test_op[{i:05d}]" for i in range(cases)]
    centre = np.exp(rng.uniform(np.log(0.01), np.log(1.0), cases))
    bimodal = rng.random(cases) < 0.1
    step_at = np.where(rng.random(cases) < 0.05, rng.integers(max(6, runs // 3), max(7, runs), cases), runs + 1)
    calibration: list[Run] = []
    with open_store(db) as store:
        for r in range(runs):
            noise = 1 + 0.005 * rng.standard_normal(cases) + 0.02 * (bimodal & (rng.random(cases) < 1 / 3))
            medians = centre * noise * np.where(r >= step_at, 1.03, 1.0)
            results = []
            for i, cid in enumerate(ids):
                m = float(medians[i])
                samples = [m * 0.999, m, m * 1.002]
                speedup = (
                    Speedup("torch.op", (), 2.0 * centre[i] / m, 1.9 * centre[i] / m, 2.1 * centre[i] / m)
                    if i % 2 == 0
                    else None
                )
                results.append(
                    CaseResult(
                        cid,
                        summarize(samples, Timer.CUDA_EVENT),
                        tuple(samples),
                        speedup=speedup,
                        nodeid=cid,
                        metrics=(Metric(PEAK_ALLOCATED, float(1 << (20 + i % 10)), "byte", "memory"),),
                        gpu_state=GpuState(polls=10, sm_clock_mhz=1980.0, power_median_w=300.0, temperature_max_c=45.0),
                        autotune=(("matmul_kernel", "BLOCK_M: 128, BLOCK_N: 64, num_warps: 4"),) if i % 10 == 0 else (),
                    )
                )
            argv = "perfgate calibrate --runs 6" if r < 6 else "pytest --perfgate"
            info = RunInfo(
                f"2026-{1 + r // 700:02d}-{1 + r // 25 % 28:02d}T{r % 24:02d}:00:00+00:00",
                "",
                git_commit=f"{r:08x}" + "0" * 32,
                git_branch="main",
                argv=argv,
                run_uid=f"synthetic-{r}",
            )
            run = Run(info, env, tuple(results))
            store.save_run(run)
            if r < 6:
                calibration.append(run)
    baseline_dir.mkdir(parents=True, exist_ok=True)
    path = baseline_dir / "nvidia-h100-80gb-hbm3.json"
    write_baseline(calibrated_baseline(None, calibration, path, "site_bench", "synthetic", Settings()))
    return db, baseline_dir
