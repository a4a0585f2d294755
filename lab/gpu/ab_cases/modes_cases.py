"""Cases for lab/gpu/ab_modes.py: torch library kernels of the kinds issue 30 names (a cuDNN channels_last bf16
conv, SDPA on the flash backend, a cuBLAS bf16 GEMM, atomics, a scan, a sort, a ~10 us elementwise op) and this
repository's Triton matmul and softmax at shapes the bundled suite does not use (timed against torch's own).
Each entry makes (work, inputs, reference or None). Without CUDA (`ab_modes.py --host`, the plumbing on a
machine without a GPU) the cases are pure-Python workloads on the host clock.

Copied into the throwaway project beside test_ab_modes.py and accuracy_cases.py
(scripts/accuracy/test_accuracy_cases.py, whose torch guard, host workloads and `spin_after` it reuses):
`spin_after` is how a commit injects a slowdown, a GPU spin of fixed cycles after the work (0 cycles: a spin
kernel that returns at once, so the launches are the same in every commit)."""

from __future__ import annotations

import time

from accuracy_cases import CUDA, _host_cases, spin_after, torch

__all__ = ["CASES", "CUDA", "host_spin_after", "spin_after"]


def _gpu_cases():
    import torch.nn.functional as F

    import kernels

    def randn(*shape, dtype=torch.bfloat16):
        return torch.randn(*shape, device="cuda", dtype=dtype)

    def conv():
        x = randn(16, 256, 28, 28).to(memory_format=torch.channels_last)
        w = randn(256, 256, 3, 3).to(memory_format=torch.channels_last)
        return (lambda a, b: F.conv2d(a, b, padding=1)), (x, w), None

    def sdpa():
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def flash(q, k, v):
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        return flash, tuple(randn(4, 16, 2048, 128) for _ in range(3)), None

    def index_add():
        out = torch.zeros(4096, 128, device="cuda")
        index = torch.randint(0, 4096, (1 << 18,), device="cuda")
        return (lambda o, i, s: o.index_add_(0, i, s)), (out, index, randn(1 << 18, 128, dtype=torch.float32)), None

    def softmax_ref(x):
        return torch.softmax(x, -1)

    return {
        "conv_cudnn": conv,
        "sdpa_flash": sdpa,
        "gemm_cublas": lambda: (torch.matmul, (randn(8192, 4096), randn(4096, 4096)), None),
        "index_add": index_add,
        "cumsum": lambda: ((lambda x: torch.cumsum(x, -1)), (randn(4096, 4096, dtype=torch.float32),), None),
        "sort": lambda: (torch.sort, (randn(1 << 22, dtype=torch.float32),), None),
        "add_10us": lambda: (
            torch.add,
            (randn(1 << 20, dtype=torch.float32), randn(1 << 20, dtype=torch.float32)),
            None,
        ),
        "triton_matmul": lambda: (kernels.matmul, (randn(3072, 3072), randn(3072, 3072)), torch.matmul),
        "triton_softmax": lambda: (kernels.softmax, (randn(4096, 2048),), softmax_ref),
    }


CASES = _gpu_cases() if CUDA else _host_cases()


def host_spin_after(fn, seconds):
    """fn, then a busy wait of `seconds` (the host clock's injection: the plumbing only)."""

    def call(*a):
        out = fn(*a)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
        return out

    return call
