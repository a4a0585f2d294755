"""Cases for the accuracy experiment (scripts/accuracy.py): eight kinds of GPU work perfgate's own suite
does not tune for, each with a slowdown that can be injected from outside.

PERFGATE_ACCURACY_LEVELS="0" (default) or "2,3,5,10": every case is measured once per level, as
`test_x[case-L]`. At level L a GPU spin kernel (torch.cuda._sleep) runs after the work for L% of the
work's own time, calibrated in this process; at level 0 it runs for 0 cycles, so the launch count never
changes. The Triton cases are timed side by side with the torch operation they replace (their speedup
is gated too); the spin slows only the candidate. Two cases with no natural reference also appear with a
probe reference (`*_probe`). Without CUDA (scripts/accuracy.py host) the cases are two pure-Python
workloads and the spin is a busy-wait.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time

import pytest

LEVELS = [float(x) for x in os.environ.get("PERFGATE_ACCURACY_LEVELS", "0").split(",")]
try:
    import torch

    CUDA = torch.cuda.is_available()
except ImportError:
    torch = None
    CUDA = False


def _gpu_cases():
    import kernels

    def randn(*shape, dtype=torch.bfloat16):
        return torch.randn(*shape, device="cuda", dtype=dtype)

    def sdpa(q, k, v):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    def attention():
        q, k, v = (randn(2, 16, 2048, 128) for _ in range(3))
        return kernels.flash_attention, (q, k, v), sdpa

    f32 = torch.float32
    return {  # (work, inputs, the torch operation it replaces or None)
        "copy": lambda: ((lambda s, d: d.copy_(s)), (randn(1 << 26, dtype=f32), randn(1 << 26, dtype=f32)), None),
        "small_add": lambda: (torch.add, (randn(1 << 20, dtype=f32), randn(1 << 20, dtype=f32)), None),
        "softmax": lambda: (kernels.softmax, (randn(8192, 8192),), lambda x: torch.softmax(x, -1)),
        "layer_norm": lambda: (
            kernels.layer_norm,
            (randn(8192, 8192), randn(8192), randn(8192)),
            lambda x, w, b: torch.nn.functional.layer_norm(x, (8192,), w, b),
        ),
        "gelu": lambda: (
            kernels.fused_add_gelu,
            (randn(8192, 8192), randn(8192)),
            lambda x, b: torch.nn.functional.gelu(x + b),
        ),
        "cublas_matmul": lambda: (torch.matmul, (randn(6144, 4096), randn(4096, 3072)), None),
        "triton_matmul": lambda: (kernels.matmul, (randn(4096, 4096), randn(4096, 4096)), torch.matmul),
        "attention": attention,
        # No natural reference: a probe of the same kind (another GEMM, another small add, on their own
        # inputs) timed side by side. The ratio cancels the process's power state; the spin slows only
        # the case. docs/accuracy.md compares these with the time-only cases above.
        "cublas_matmul_probe": lambda: _with_probe(
            torch.matmul, (randn(6144, 4096), randn(4096, 3072)), (randn(4096, 4096), randn(4096, 4096))
        ),
        "small_add_probe": lambda: _with_probe(
            torch.add,
            (randn(1 << 20, dtype=f32), randn(1 << 20, dtype=f32)),
            (randn(1 << 20, dtype=f32), randn(1 << 20, dtype=f32)),
        ),
    }


def _with_probe(work, inputs, probe_inputs):
    def probe(*_):
        return work(*probe_inputs)

    return work, inputs, probe


def _host_cases():
    rng = random.Random(0)
    data = {f"k{i}": [rng.random() for _ in range(20)] for i in range(200)}
    numbers = [rng.random() for _ in range(20_000)]
    return {"json_encode": lambda: (json.dumps, (data,), None), "sort": lambda: (sorted, (numbers,), None)}


CASES = _gpu_cases() if CUDA else _host_cases()


def _gpu_spin(fn, args, pct):
    """fn, then a spin of pct% of fn's own time (0 cycles at 0%)."""

    def timed(call, reps=20):
        times = []
        for _ in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            call()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
        return statistics.median(times)

    for _ in range(3):
        fn(*args)
    base_ms = timed(lambda: fn(*args))
    cycles_per_ms = 1_000_000 / timed(lambda: torch.cuda._sleep(1_000_000), reps=5)
    return spin_after(fn, int(pct / 100 * base_ms * cycles_per_ms))


def spin_after(fn, cycles):
    """fn, then a GPU spin of `cycles` (0: a spin kernel that returns at once)."""

    def call(*a):
        out = fn(*a)
        torch.cuda._sleep(cycles)
        return out

    return call


def _host_spin(fn, args, pct):
    for _ in range(3):
        fn(*args)
    times = []
    for _ in range(30):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    extra = pct / 100 * statistics.median(times)

    def call(*a):
        out = fn(*a)
        end = time.perf_counter() + extra
        while time.perf_counter() < end:
            pass
        return out

    return call


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: f"{level:g}")
@pytest.mark.parametrize("case", sorted(CASES))
def test_case(perfgate, case, level):
    fn, args, reference = CASES[case]()
    call = (_gpu_spin if CUDA else _host_spin)(fn, args, level)
    perfgate.measure(call, args, reference=reference)
