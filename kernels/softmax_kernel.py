"""Row softmax over the last dimension of a 2-D tensor.

Rows that fit one block (n_cols <= MAX_FUSED_COLS) are read once and written once: memory-bound at
2 x bytes. Wider rows take an online (max, sum) pass and a write pass, reading the row twice.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels._common import FLOAT_DTYPES, check_dtype, check_ndim, detuned, output

MAX_FUSED_COLS = 16384


@triton.jit
def _softmax_fused(x_ptr, out_ptr, n_cols, stride_x, stride_o, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    out = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * stride_o + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_looped(x_ptr, out_ptr, n_cols, stride_x, stride_o, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # lanes that have only seen -inf keep s = 0 (avoid inf - inf = nan)
        s = tl.where(m_new == -float("inf"), 0.0, s * tl.exp(m - m_new) + tl.exp(x - m_new))
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(out_ptr + row * stride_o + cols, (tl.exp(x - row_max) / total).to(out_ptr.dtype.element_ty), mask=mask)


def _warps(block: int) -> int:
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


def softmax(
    x: torch.Tensor, num_warps: int | None = None, block: int | None = None, out: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(x, dim=-1) for 2-D fp32/fp16/bf16 x; fp32 math, output in x's dtype."""
    check_ndim("softmax", x, 2)
    check_dtype("softmax", x, FLOAT_DTYPES)
    if x.stride(-1) != 1:
        x = x.contiguous()
    n_rows, n_cols = x.shape
    out = output("softmax", out, x.shape, x)
    if n_rows == 0 or n_cols == 0:
        return out
    fused = n_cols <= MAX_FUSED_COLS and block is None and not detuned("softmax")
    if fused:
        blk = triton.next_power_of_2(n_cols)
        _softmax_fused[(n_rows,)](
            x, out, n_cols, x.stride(0), out.stride(0), BLOCK=blk, num_warps=num_warps or _warps(blk)
        )
    else:
        blk = block or (128 if detuned("softmax") else 4096)
        _softmax_looped[(n_rows,)](
            x,
            out,
            n_cols,
            x.stride(0),
            out.stride(0),
            BLOCK=blk,
            num_warps=num_warps or (1 if detuned("softmax") else _warps(blk)),
        )
    return out
