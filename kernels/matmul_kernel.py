"""C = A @ B for 2-D fp16/bf16 (fp32 accumulation) and fp32 inputs; autotuned tiles with grouped
ordering so neighbouring programs share A and B tiles in L2.

`config=MatmulConfig(...)` pins the launch (no autotuning). `KERNELS_DETUNE=matmul` pins a
register-heavy 256x256 tile on 4 warps: the accumulator alone needs 512 fp32 registers per thread,
so it spills and occupancy collapses: the gate's demonstration of a "refactor added registers".
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kernels._common import FLOAT_DTYPES, check_dtype, check_ndim, check_same, detuned, output


@dataclass(frozen=True)
class MatmulConfig:
    block_m: int = 128
    block_n: int = 128
    block_k: int = 64
    group_m: int = 8
    num_warps: int = 8
    num_stages: int = 3


DETUNED = MatmulConfig(block_m=256, block_n=256, block_k=64, group_m=8, num_warps=4, num_stages=2)
INTERPRETER = MatmulConfig(block_m=32, block_n=32, block_k=32, group_m=4, num_warps=4, num_stages=1)


def _cfg(bm, bn, bk, w, s, g=8):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g}, num_warps=w, num_stages=s)


# Hopper-leaning candidates (bf16/fp16 need 128x256x64 / 4 stages to keep wgmma fed); small ones for
# skinny shapes and fp32.
# Each config costs a compile and a benchmark per new (M, N, K): keep the list short.
AUTOTUNE_CONFIGS = [
    _cfg(128, 256, 64, 8, 3),
    _cfg(128, 256, 64, 8, 4),
    _cfg(128, 128, 64, 8, 4),
    _cfg(128, 64, 64, 4, 4),
    _cfg(64, 64, 32, 4, 4),
]


@triton.jit
def _matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    IEEE: tl.constexpr,
):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :].to(tl.int64) * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        if IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


_matmul_autotuned = triton.autotune(configs=AUTOTUNE_CONFIGS, key=["M", "N", "K", "IEEE"])(_matmul_kernel)


def matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    config: MatmulConfig | None = None,
    allow_tf32: bool = False,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """a @ b. fp32 inputs use exact fp32 products unless allow_tf32=True."""
    check_ndim("matmul", a, 2)
    check_ndim("matmul", b, 2)
    check_same("matmul", a, b)
    check_dtype("matmul", a, FLOAT_DTYPES)
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: inner dimensions differ: {tuple(a.shape)} @ {tuple(b.shape)}")
    M, K = a.shape
    N = b.shape[1]
    c = output("matmul", out, (M, N), a)
    if M == 0 or N == 0:
        return c
    if K == 0:
        return c.zero_()
    ieee = a.dtype == torch.float32 and not allow_tf32
    if config is None and detuned("matmul"):
        config = DETUNED
    if config is None and os.environ.get("TRITON_INTERPRET") == "1":
        config = INTERPRETER  # autotuning in the interpreter would run every config on the CPU
    args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    if config is None:
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
        _matmul_autotuned[grid](*args, IEEE=ieee)
    else:
        grid = (triton.cdiv(M, config.block_m) * triton.cdiv(N, config.block_n),)
        _matmul_kernel[grid](
            *args,
            BLOCK_M=config.block_m,
            BLOCK_N=config.block_n,
            BLOCK_K=config.block_k,
            GROUP_M=config.group_m,
            IEEE=ieee,
            num_warps=config.num_warps,
            num_stages=config.num_stages,
        )
    return c
