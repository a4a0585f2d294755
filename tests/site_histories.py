"""Histories for the dashboard and the change points: one from real H100 recordings, one synthetic at scale.
Shared by the tests and scripts/site_bench.py (importable helpers, not a test module).

The recorded history is GPU session A2's (docs/data/h100/gallery/history.db.gz: six calibration processes,
a gate, a de-tuned gate whose softmax regressed, a profiled gate) followed by session C's accuracy
processes (docs/data/h100/accuracy_c_process_medians.json): for ten more cases, six calibration processes,
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
H100 = ROOT / "docs" / "data" / "h100"
GALLERY = H100 / "gallery"
ACCURACY_PREFIX = "accuracy/session_c.py::"
SLOWED = "5"  # the injected slowdown (percent) whose processes follow the unchanged ones


def single_median_case(case_id: str, median_ms: float, speedup: float | None = None, reference: str = "",
                       thresholds: CaseThresholds = CaseThresholds()) -> CaseResult:
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
        results = tuple(single_median_case(ACCURACY_PREFIX + key[: -len(suffix)], v[0], v[1],
                                           "torch" if v[1] is not None else "")
                        for key, v in sorted(processes.items()) if key.endswith(suffix))
        commit = {"calibration": "c-calibrated", "unchanged": "c-unchanged"}.get(phase, f"c-slowed-{SLOWED}%")
        argv = "perfgate calibrate --runs 6" if phase == "calibration" else "pytest --perfgate"
        info = RunInfo(f"2026-11-23T{8 + i // 60:02d}:{i % 60:02d}:00+00:00", "", git_commit=commit,
                       git_branch="main", argv=argv, run_uid=f"accuracy-c-{i}")
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
        entry: dict[str, Any] = {"timer": "cuda_event", "median_ms": statistics.median(times),
                                 "samples_ms": times, "process_medians_ms": times}
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
