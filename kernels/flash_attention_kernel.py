"""Flash attention forward (FlashAttention-2 schedule): softmax(Q K^T * scale) V without materialising
the score matrix. (batch, heads, seq, head_dim) bf16/fp16; any sequence length; optional causal mask
(top-left aligned, as torch's scaled_dot_product_attention(is_causal=True)).

Blocks fully inside the sequence and below the diagonal run without masks; only the diagonal and
tail blocks pay for masking.
"""

from __future__ import annotations

import math
import os

import torch
import triton
import triton.language as tl

from kernels._common import HALF_DTYPES, check_dtype, check_ndim, check_same, detuned, output

HEAD_DIMS = (16, 32, 64, 128)


def _cfg(bm, bn, w, s):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)


AUTOTUNE_CONFIGS = [_cfg(128, 128, 8, 3), _cfg(128, 64, 4, 3), _cfg(128, 64, 8, 3), _cfg(64, 64, 4, 3)]


@triton.jit
def _attn_inner(
    acc,
    l_i,
    m_i,
    q,
    k_base,
    v_base,
    stride_kn,
    stride_vn,
    offs_m,
    offs_d,
    lo,
    hi,
    n_k,
    qk_scale,
    BLOCK_N: tl.constexpr,
    MASK_BOUNDS: tl.constexpr,
    MASK_CAUSAL: tl.constexpr,
):
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        k_ptrs = k_base + cols[None, :].to(tl.int64) * stride_kn + offs_d[:, None]
        v_ptrs = v_base + cols[:, None].to(tl.int64) * stride_vn + offs_d[None, :]
        if MASK_BOUNDS:
            k = tl.load(k_ptrs, mask=cols[None, :] < n_k, other=0.0)
            v = tl.load(v_ptrs, mask=cols[:, None] < n_k, other=0.0)
        else:
            k = tl.load(k_ptrs)
            v = tl.load(v_ptrs)
        qk = tl.dot(q, k) * qk_scale
        if MASK_BOUNDS:
            qk = tl.where(cols[None, :] < n_k, qk, -float("inf"))
        if MASK_CAUSAL:
            qk = tl.where(offs_m[:, None] >= cols[None, :], qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(
    Q,
    K,
    V,
    Out,
    sm_scale,
    sqz,
    sqh,
    sqm,
    skz,
    skh,
    skn,
    svz,
    svh,
    svn,
    soz,
    soh,
    som,
    H,
    n_q,
    n_k,
    HEAD_DIM: tl.constexpr,
    CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = (off_hz // H).to(tl.int64)
    off_h = (off_hz % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + off_z * sqz + off_h * sqh + offs_m[:, None].to(tl.int64) * sqm + offs_d[None, :]
    q = tl.load(q_ptrs, mask=offs_m[:, None] < n_q, other=0.0)
    k_base = K + off_z * skz + off_h * skh
    v_base = V + off_z * svz + off_h * svh
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    qk_scale = sm_scale * 1.44269504  # exp(x) = exp2(x * log2(e))
    full_end = (n_k // BLOCK_N) * BLOCK_N
    if CAUSAL:
        diag_end = tl.minimum((start_m + 1) * BLOCK_M, n_k)
        free_end = tl.minimum(start_m * BLOCK_M, full_end)
        acc, l_i, m_i = _attn_inner(
            acc,
            l_i,
            m_i,
            q,
            k_base,
            v_base,
            skn,
            svn,
            offs_m,
            offs_d,
            0,
            free_end,
            n_k,
            qk_scale,
            BLOCK_N,
            False,
            False,
        )
        acc, l_i, m_i = _attn_inner(
            acc,
            l_i,
            m_i,
            q,
            k_base,
            v_base,
            skn,
            svn,
            offs_m,
            offs_d,
            free_end,
            diag_end,
            n_k,
            qk_scale,
            BLOCK_N,
            True,
            True,
        )
    else:
        acc, l_i, m_i = _attn_inner(
            acc,
            l_i,
            m_i,
            q,
            k_base,
            v_base,
            skn,
            svn,
            offs_m,
            offs_d,
            0,
            full_end,
            n_k,
            qk_scale,
            BLOCK_N,
            False,
            False,
        )
        acc, l_i, m_i = _attn_inner(
            acc,
            l_i,
            m_i,
            q,
            k_base,
            v_base,
            skn,
            svn,
            offs_m,
            offs_d,
            full_end,
            n_k,
            n_k,
            qk_scale,
            BLOCK_N,
            True,
            False,
        )
    acc = acc / l_i[:, None]
    o_ptrs = Out + off_z * soz + off_h * soh + offs_m[:, None].to(tl.int64) * som + offs_d[None, :]
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=offs_m[:, None] < n_q)


_attn_autotuned = triton.autotune(configs=AUTOTUNE_CONFIGS, key=["n_q", "n_k", "HEAD_DIM", "CAUSAL"])(_attn_fwd)


def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = False,
    sm_scale: float | None = None,
    block_m: int | None = None,
    block_n: int | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """softmax(q k^T * sm_scale [+ causal mask]) v; q (B, H, Nq, D), k/v (B, H, Nk, D)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_ndim(f"flash_attention {name}", t, 4)
    check_same("flash_attention", q, k, v)
    check_dtype("flash_attention", q, HALF_DTYPES)
    B, H, n_q, D = q.shape
    if k.shape != v.shape or k.shape[:2] != (B, H) or k.shape[3] != D:
        raise ValueError(
            f"flash_attention: shapes do not match: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    if D not in HEAD_DIMS:
        raise ValueError(f"flash_attention: head_dim {D} is not supported (supported: {HEAD_DIMS})")
    n_k = k.shape[2]
    if n_k == 0:
        raise ValueError("flash_attention: keys must have at least one position")
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    out = output("flash_attention", out, q.shape, q)
    if B * H * n_q == 0:
        return out
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(D)
    args = (q, k, v, out, scale, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *out.stride()[:3], H, n_q, n_k)
    pinned = block_m is not None or detuned("flash_attention") or os.environ.get("TRITON_INTERPRET") == "1"
    if pinned:
        bm = block_m or (32 if os.environ.get("TRITON_INTERPRET") == "1" else 64)
        bn = block_n or (16 if detuned("flash_attention") or os.environ.get("TRITON_INTERPRET") == "1" else 64)
        if bm % bn:
            raise ValueError(f"flash_attention: block_m ({bm}) must be a multiple of block_n ({bn})")
        _attn_fwd[(triton.cdiv(n_q, bm), B * H)](
            *args,
            HEAD_DIM=D,
            CAUSAL=causal,
            BLOCK_M=bm,
            BLOCK_N=bn,
            num_warps=num_warps or 4,
            num_stages=num_stages or 2,
        )
    else:
        grid = lambda meta: (triton.cdiv(n_q, meta["BLOCK_M"]), B * H)  # noqa: E731
        _attn_autotuned[grid](*args, HEAD_DIM=D, CAUSAL=causal)
    return out
