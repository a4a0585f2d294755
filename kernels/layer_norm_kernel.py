"""LayerNorm over the last dimension: one program per row, fp32 statistics, affine weight and bias."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels._common import FLOAT_DTYPES, check_dtype, check_same, detuned, output

MAX_FUSED_COLS = 16384


@triton.jit
def _layer_norm_fused(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_x, stride_o, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * stride_o + cols, (d * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _layer_norm_looped(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_x, stride_o, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride_x + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row * stride_o + cols, ((x - mean) * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)


def layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    eps: float = 1e-5,
    num_warps: int | None = None,
    block: int | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """LayerNorm over the last dimension of x (any leading shape)."""
    check_same("layer_norm", x, weight, bias)
    check_dtype("layer_norm", x, FLOAT_DTYPES)
    if x.dim() == 0 or weight.shape != (x.shape[-1],) or bias.shape != (x.shape[-1],):
        raise ValueError(
            f"layer_norm: weight and bias must have shape ({x.shape[-1] if x.dim() else '?'},), "
            f"got {tuple(weight.shape)} and {tuple(bias.shape)}"
        )
    shape = x.shape
    x2 = x.reshape(-1, shape[-1]).contiguous()
    weight, bias = weight.contiguous(), bias.contiguous()
    out = output("layer_norm", None if out is None else out.view(x2.shape), x2.shape, x2)
    n_rows, n_cols = x2.shape
    if n_rows and n_cols:
        if n_cols <= MAX_FUSED_COLS and block is None and not detuned("layer_norm"):
            blk = triton.next_power_of_2(n_cols)
            _layer_norm_fused[(n_rows,)](
                x2,
                weight,
                bias,
                out,
                n_cols,
                x2.stride(0),
                out.stride(0),
                eps,
                BLOCK=blk,
                num_warps=num_warps or (4 if blk <= 1024 else 8 if blk <= 4096 else 16),
            )
        else:
            blk = block or (128 if detuned("layer_norm") else 2048)
            _layer_norm_looped[(n_rows,)](
                x2,
                weight,
                bias,
                out,
                n_cols,
                x2.stride(0),
                out.stride(0),
                eps,
                BLOCK=blk,
                num_warps=num_warps or (1 if detuned("layer_norm") else 8),
            )
    return out.reshape(shape)
