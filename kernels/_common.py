"""Input checks and the de-tuning knob shared by the kernels."""

from __future__ import annotations

import os

import torch

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
HALF_DTYPES = (torch.float16, torch.bfloat16)


def detuned(kernel: str) -> bool:
    """True when KERNELS_DETUNE names this kernel (or is 'all')."""
    names = {n.strip() for n in os.environ.get("KERNELS_DETUNE", "").split(",") if n.strip()}
    return "all" in names or kernel in names


def check_dtype(name: str, t: torch.Tensor, allowed: tuple) -> None:
    if t.dtype not in allowed:
        raise ValueError(f"{name}: dtype {t.dtype} is not supported (supported: {', '.join(map(str, allowed))})")


def check_same(name: str, *tensors: torch.Tensor) -> None:
    first = tensors[0]
    for t in tensors[1:]:
        if t.dtype != first.dtype:
            raise ValueError(f"{name}: all inputs must share a dtype, got {first.dtype} and {t.dtype}")
        if t.device != first.device:
            raise ValueError(f"{name}: all inputs must be on one device, got {first.device} and {t.device}")


def check_ndim(name: str, t: torch.Tensor, ndim: int) -> None:
    if t.dim() != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D tensor, got shape {tuple(t.shape)}")


def output(name: str, out: torch.Tensor | None, shape: tuple, like: torch.Tensor) -> torch.Tensor:
    """A fresh output, or the caller's `out=` after checking it (tests pass NaN-poisoned ones)."""
    if out is None:
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    if tuple(out.shape) != tuple(shape) or out.dtype != like.dtype or out.device != like.device:
        raise ValueError(
            f"{name}: out must be {tuple(shape)} {like.dtype} on {like.device}, got "
            f"{tuple(out.shape)} {out.dtype} on {out.device}"
        )
    if not out.is_contiguous():
        raise ValueError(f"{name}: out must be contiguous")
    return out
