"""Memory-bound elementwise kernels: vector_add, mul_add, fused_add_gelu.

One program handles BLOCK_SIZE contiguous elements; 4 warps and BLOCK_SIZE=1024 (fp32: 8 elements
per thread as 2 x 128-bit accesses) keep enough bytes in flight to reach HBM bandwidth on the H100.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels._common import FLOAT_DTYPES, check_dtype, check_same, detuned, output

DEFAULT_BLOCK = 1024
DETUNED_BLOCK = 32  # one warp's worth: too few bytes in flight, launch-bound grid


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _mul_add_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask).to(tl.float32)
    c = tl.load(c_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (a * b + c).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _add_gelu_kernel(x_ptr, bias_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    # 2-D grid (row, column block): the bias index is the column itself, no per-element 64-bit modulo
    # (that modulo held the 1-D version to 84% of copy bandwidth on the H100)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    offs = row * n_cols + cols
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    b = tl.load(bias_ptr + cols, mask=mask).to(tl.float32)  # bias stays in L2/L1
    v = x + b
    out = 0.5 * v * (1.0 + tl.math.erf(v * 0.7071067811865476))
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def _block(name: str, block_size: int | None) -> int:
    if block_size is not None:
        if block_size <= 0 or block_size & (block_size - 1):
            raise ValueError(f"{name}: block_size must be a power of two, got {block_size}")
        return block_size
    return DETUNED_BLOCK if detuned(name) else DEFAULT_BLOCK


def _prepare(name: str, *tensors: torch.Tensor) -> list[torch.Tensor]:
    check_same(name, *tensors)
    check_dtype(name, tensors[0], FLOAT_DTYPES)
    shape = tensors[0].shape
    for t in tensors[1:]:
        if t.shape != shape:
            raise ValueError(f"{name}: shapes differ: {tuple(shape)} vs {tuple(t.shape)}")
    return [t.contiguous() for t in tensors]


def vector_add(
    x: torch.Tensor, y: torch.Tensor, block_size: int | None = None, out: torch.Tensor | None = None
) -> torch.Tensor:
    """x + y, elementwise, same shape and dtype."""
    x, y = _prepare("vector_add", x, y)
    out = output("vector_add", out, x.shape, x)
    n = x.numel()
    bs = _block("vector_add", block_size)
    if n:
        _add_kernel[(triton.cdiv(n, bs),)](x, y, out, n, BLOCK_SIZE=bs, num_warps=4 if bs >= 128 else 1)
    return out


def mul_add(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, block_size: int | None = None, out: torch.Tensor | None = None
) -> torch.Tensor:
    """a * b + c, elementwise, computed in fp32."""
    a, b, c = _prepare("mul_add", a, b, c)
    out = output("mul_add", out, a.shape, a)
    n = a.numel()
    bs = _block("mul_add", block_size)
    if n:
        _mul_add_kernel[(triton.cdiv(n, bs),)](a, b, c, out, n, BLOCK_SIZE=bs, num_warps=4 if bs >= 128 else 1)
    return out


def fused_add_gelu(
    x: torch.Tensor, bias: torch.Tensor, block_size: int | None = None, out: torch.Tensor | None = None
) -> torch.Tensor:
    """GELU (erf form) of x + bias, bias broadcast over the last dimension, in one pass."""
    check_same("fused_add_gelu", x, bias)
    check_dtype("fused_add_gelu", x, FLOAT_DTYPES)
    if x.dim() == 0 or bias.dim() != 1 or bias.shape[0] != x.shape[-1]:
        raise ValueError(
            f"fused_add_gelu: bias must be 1-D with x.shape[-1]={x.shape[-1] if x.dim() else None} "
            f"elements, got {tuple(bias.shape)}"
        )
    x, bias = x.contiguous(), bias.contiguous()
    out = output("fused_add_gelu", out, x.shape, x)
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols if n_cols else 0
    bs = _block("fused_add_gelu", block_size)
    if block_size is None and not detuned("fused_add_gelu"):
        bs = min(bs, max(128, triton.next_power_of_2(n_cols)))  # narrow rows: no mostly-masked blocks
    if n_rows:
        _add_gelu_kernel[(n_rows, triton.cdiv(n_cols, bs))](
            x, bias, out, n_cols, BLOCK_SIZE=bs, num_warps=4 if bs >= 128 else 1
        )
    return out
