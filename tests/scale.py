"""Large synthetic gates (thousands of cases, many findings) for the report tests and scripts/bench_scale.py:
the verdicts a 10,000-case gate reaches, built directly, so rendering can be measured without timing."""

from __future__ import annotations

from dataclasses import replace

from perfgate.gate.findings import GateFacts, findings_for
from perfgate.metrics import TIME_METRIC
from perfgate.model import (
    CaseResult,
    Comparison,
    Direction,
    Environment,
    FindingKind,
    GateResult,
    Run,
    RunInfo,
    Timer,
    TimingStats,
    Verdict,
)

H100 = Environment("cuda", "NVIDIA H100 80GB HBM3", compute_capability="9.0")


def case_id(i: int, tag: str = "h100") -> str:
    return f"kernels/tests/test_perf.py::test_op[{tag}-bf16-{4096 + i}x8192-case{i:05d}]"


def scale_gate(
    n: int, regressed: int, inconclusive: int, tag: str = "h100", strict: bool = False, env: Environment = H100
) -> tuple[GateResult, Run]:
    """`n` cases: the first `regressed` regressed (+5% to +50%), the next `inconclusive` inconclusive, the
    rest unchanged; findings as the gate derives them (one per inconclusive case)."""
    rows = []
    results = []
    for i in range(n):
        cid = case_id(i, tag)
        if i < regressed:
            verdict, change = Verdict.REGRESSED, 5.0 + 45.0 * i / max(1, regressed)
        elif i < regressed + inconclusive:
            verdict, change = Verdict.INCONCLUSIVE, 1.1 + (i % 7) / 100
        else:
            verdict, change = Verdict.UNCHANGED, (i % 11 - 5) / 10
        base = 0.1 + (i % 97) / 1000
        rows.append(
            Comparison(
                cid,
                TIME_METRIC,
                "ms",
                Direction.LOWER,
                verdict,
                baseline=base,
                current=base * (1 + change / 100),
                change_pct=change,
                ci_low_pct=change - 0.4,
                ci_high_pct=change + 0.4,
                threshold_pct=1.3,
                noise_pct=0.4,
                processes=2,
                note="calibrated",
            )
        )
        median = base * (1 + change / 100)
        timing = TimingStats(
            Timer.CUDA_EVENT,
            200,
            median,
            median,
            median / 100,
            median * 0.98,
            median * 1.05,
            median * 0.99,
            median * 1.01,
        )
        results.append(
            CaseResult(cid, timing, (), nodeid=cid.split("[")[0], location=("kernels/tests/test_perf.py", 10))
        )
    run = Run(
        RunInfo("2026-11-21T00:00:00+00:00", "2026-11-21T00:10:00+00:00", git_commit="abc123"),
        env,
        tuple(results),
        run_id=1,
    )
    gate = GateResult(tuple(rows), env, env, calibrated=True, strict=strict)
    findings = tuple(f for f in findings_for(run, None, gate, GateFacts()) if f.kind is not FindingKind.NO_BASELINE)
    return replace(gate, findings=findings), run
