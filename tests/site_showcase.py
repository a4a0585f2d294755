"""A small synthetic history that shows every view of the dashboard (shared by tests/test_site*.py and
scripts/dashboard_screenshots.py; an importable helper, not a test module).

One H100, three cases, six calibration processes then 34 gate runs on hex commits: the matmul 40% slower for
its first ten gate runs (registers 128 -> 168 per thread, another SASS) and then fixed (a step found only
where the change-point search sees it: near the start of the series), the softmax 8% slower from run 30 on
(still failing), the RMS norm 100x slower in the last four runs (a log scale's case); then one stored A/B
comparison (a pull request whose head makes the matmul 12% slower).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from perfgate.compiled.records import CompiledCase, KernelFacts, KernelSource, Limiter, Occupancy
from perfgate.model import Environment, Run, RunInfo, RunKind, Verdict
from perfgate.store import open_store
from perfgate.store.verdicts import MetricVerdict, RunVerdicts
from tests.helpers import case, noisy

ENV = Environment(device_kind="cuda", device_name="NVIDIA H100 80GB HBM3", compute_capability="9.0")
MATMUL = "kernels/tests/test_perf.py::test_matmul[fp16]"
SOFTMAX = "kernels/tests/test_perf.py::test_softmax[bf16]"
NORM = "kernels/tests/test_perf.py::test_rms_norm[bf16]"
CENTRES = {MATMUL: 0.8, SOFTMAX: 0.05, NORM: 0.02}
REPO_URL = "https://github.com/example/kernels"
AB_PAIR = "pr-42-attempt-1"
RUNS = 40  # 6 calibration processes, then gate runs


def commit_of(label: str) -> str:
    return hashlib.sha1(label.encode()).hexdigest()


def factor(case_id: str, r: int) -> float:
    if case_id == MATMUL and 6 <= r < 16:
        return 1.4
    if case_id == SOFTMAX and r >= 30:
        return 1.08
    if case_id == NORM and r >= 36:
        return 100.0
    return 1.0


def _occupancy(blocks: int) -> Occupancy:
    return Occupancy(blocks, 8, 64, Limiter.REGISTERS, blocks, 8, 8, 32)


def _compiled(case_id: str, slow: bool) -> CompiledCase | None:
    if case_id == MATMUL:
        regs, sass, blocks = (168, "9c0ffee1d2e3f405", 3) if slow else (128, "a5a5cf3781047df0", 4)
        k = KernelFacts(
            "_matmul_kernel",
            KernelSource.TRITON,
            regs,
            0,
            0,
            0,
            0,
            49152,
            (256, 1, 1),
            (132, 1, 1),
            8,
            3,
            _occupancy(blocks),
            sass,
            key="_matmul_kernel",
        )
        return CompiledCase((k,), "0011223344556677", "a: (4096, 4096) fp16", "sm_90")
    if case_id == SOFTMAX:
        k = KernelFacts(
            "_softmax_kernel",
            KernelSource.TRITON,
            32,
            0,
            0,
            0,
            0,
            0,
            (128, 1, 1),
            (4096, 1, 1),
            4,
            1,
            _occupancy(8),
            "161a552499b8b245",
            key="_softmax_kernel",
        )
        return CompiledCase((k,), "8899aabbccddeeff", "x: (4096, 8192) bf16", "sm_90")
    return None


def _run(r: int, commit: str, times: dict[str, float], kind: RunKind = RunKind.GATE, pair: str = "") -> Run:
    argv = "perfgate calibrate --runs 6" if r < 6 else "pytest --perfgate"
    results = tuple(
        case(cid, noisy(t, n=30, seed=r * 7 + i, sd=0.002), compiled=_compiled(cid, t > CENTRES[cid] * 1.2))
        for i, (cid, t) in enumerate(sorted(times.items()))
    )
    info = RunInfo(
        f"2026-11-{1 + r // 24:02d}T{r % 24:02d}:00:00+00:00",
        "",
        git_commit=commit,
        git_branch="main",
        argv=argv,
        run_uid=f"showcase-{r}-{kind.value}",
        kind=RunKind.CALIBRATION if r < 6 and kind is RunKind.GATE else kind,
        ab_pair=pair,
    )
    return Run(info, ENV, results)


def showcase_history(db: Path, baseline_dir: Path) -> tuple[Path, Path]:
    from perfgate.baseline.write import calibrated_baseline, write_baseline
    from perfgate.config.settings import Settings

    calibration = []
    with open_store(db) as store:
        for r in range(RUNS):
            commit = commit_of("calibrated" if r < 6 else f"commit {r}")
            run = _run(r, commit, {cid: c * factor(cid, r) for cid, c in CENTRES.items()})
            store.save_run(run)
            if r < 6:
                calibration.append(run)
        base = {cid: c * factor(cid, RUNS - 1) for cid, c in CENTRES.items()}
        head = dict(base) | {MATMUL: base[MATMUL] * 1.12}
        store.save_run(_run(RUNS, commit_of(f"commit {RUNS - 1}"), base, RunKind.AB_BASE, AB_PAIR))
        verdicts = RunVerdicts(
            True,
            (
                MetricVerdict(MATMUL, "median_ms", "", Verdict.REGRESSED, 12.0, 2.0),
                MetricVerdict(SOFTMAX, "median_ms", "", Verdict.UNCHANGED, 0.1, 2.0),
                MetricVerdict(NORM, "median_ms", "", Verdict.UNCHANGED, -0.2, 2.0),
            ),
        )
        store.save_run(_run(RUNS + 1, commit_of("pull request 42"), head, RunKind.AB_HEAD, AB_PAIR), verdicts)
    baseline_dir.mkdir(parents=True, exist_ok=True)
    path = baseline_dir / "nvidia-h100-80gb-hbm3.json"
    write_baseline(calibrated_baseline(None, calibration, path, "showcase", "synthetic", Settings()))
    return db, baseline_dir
