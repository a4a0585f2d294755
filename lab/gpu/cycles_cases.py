"""Cases of the cycles session (lab/gpu/cycles_session.py), copied into its throwaway project beside the test file.

Three time-only cases with their work declared: a cuBLAS bf16 8192^3 GEMM and the kernel suite's Triton 4096^2
matmul (flops: compute-bound, gated in SM cycles) and a 1 GiB copy (bytes: memory-bound, gated on time).
$CYCLES_LAB_SPIN ({case: cycles}) adds a GPU spin of that many SM cycles after the work (0: a spin kernel that
returns at once, so the launches never change); the session measures what each spin costs, in time and in
cycles, before it injects it.

With CYCLES_LAB_HOST=1 (no GPU: the session's plumbing tried on the CPU) the work runs on a stand-in SM whose
clock each process draws from a power-cap-like range (tests/manual_clock.py's FakeSm on its manual clock).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

HOST = os.environ.get("CYCLES_LAB_HOST") == "1"
SPIN: dict[str, int] = json.loads(os.environ.get("CYCLES_LAB_SPIN", "{}"))
SM: list[Any] = []  # host mode: the process's stand-in SM (set by install_host)

Case = Callable[[], tuple[Callable[..., Any], tuple[Any, ...], dict[str, int]]]


def _gpu_cases() -> dict[str, Case]:
    import torch

    def randn(*shape: int) -> Any:
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)

    def triton_matmul() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, int]]:
        import kernels

        return kernels.matmul, (randn(4096, 4096), randn(4096, 4096)), {"flops": 2 * 4096**3}

    def copy() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, int]]:
        src = torch.randn(1 << 28, device="cuda")
        return (lambda s, d: d.copy_(s)), (src, torch.empty_like(src)), {"bytes_moved": 2 * src.nbytes}

    return {
        "cublas_gemm": lambda: (torch.matmul, (randn(8192, 8192), randn(8192, 8192)), {"flops": 2 * 8192**3}),
        "triton_matmul": triton_matmul,
        "copy": copy,
    }


def _host_cases() -> dict[str, Case]:
    return {
        "cublas_gemm": lambda: ((lambda: SM[-1].compute(2.6)), (), {"flops": 2 * 8192**3}),
        "triton_matmul": lambda: ((lambda: SM[-1].compute(0.4)), (), {"flops": 2 * 4096**3}),
        "copy": lambda: ((lambda: SM[-1].wait(0.7)), (), {"bytes_moved": 1 << 31}),
    }


CASES = _host_cases() if HOST else _gpu_cases()


def with_spin(fn: Callable[..., Any], cycles: int) -> Callable[..., Any]:
    """fn, then a spin of `cycles` SM cycles on one SM (the same in every process)."""
    if HOST:

        def host_call(*args: Any) -> Any:
            out = fn(*args)
            SM[-1].compute(cycles / 1e6)
            return out

        return host_call
    import torch

    def call(*args: Any) -> Any:
        out = fn(*args)
        torch.cuda._sleep(cycles)
        return out

    return call


def install_host(mhz: float) -> None:
    """Host mode: a manual clock and a stand-in SM at `mhz` for this process (perfgate.measure.clock, sm_clock)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, os.environ["CYCLES_LAB_TESTS"])  # perfgate's tests/ (manual_clock.py)
    from manual_clock import FakeSm, ManualClock

    from perfgate.measure import clock, sm_clock

    manual = ManualClock(tick_ns=1000)
    clock.install(manual)
    SM.append(FakeSm(manual, mhz))
    sm_clock.install(SM[-1].probe)
    Path(".host-mhz").write_text(str(mhz))
