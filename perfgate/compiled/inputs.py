"""What a case is called with, as the A/B "same code" check compares it: every tensor's dtype, shape, strides,
storage offset and device, every number's and string's value; other objects by their type only."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

MAX_TEXT = 300
MAX_ITEMS = 64  # a longer sequence is described by its first items and its length
_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64"}


def describe(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[str, str]:
    """(readable text, sha256 of the full text in 16 hex)."""
    parts = [_one(a, 0) for a in args] + [f"{k}={_one(v, 0)}" for k, v in sorted(kwargs.items())]
    text = ", ".join(parts)
    sha = hashlib.sha256(text.encode()).hexdigest()[:16]
    return (text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"), sha


def _one(value: Any, depth: int) -> str:
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return repr(value)
    tensor = _tensor(value)
    if tensor is not None:
        return tensor
    if depth <= 4 and isinstance(value, (list, tuple, Mapping)):
        return _container(value, depth)
    if getattr(value, "dtype", None) is None and type(value).__module__ == "torch":
        return str(value)  # torch.bfloat16, torch.device('cuda', 0)
    return type(value).__qualname__


def _container(value: list[Any] | tuple[Any, ...] | Mapping[Any, Any], depth: int) -> str:
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))[:MAX_ITEMS]
        return "{" + ", ".join(f"{k!s}: {_one(v, depth + 1)}" for k, v in items) + "}"
    inner = ", ".join(_one(v, depth + 1) for v in value[:MAX_ITEMS])
    more = f", +{len(value) - MAX_ITEMS}" if len(value) > MAX_ITEMS else ""
    return f"[{inner}{more}]" if isinstance(value, list) else f"({inner}{more})"


def _tensor(value: Any) -> str | None:
    """A torch tensor (or anything shaped like one: numpy arrays) as dtype[shape](strides)+offset@device."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is None or dtype is None or isinstance(value, type):
        return None
    try:
        dims = tuple(int(d) for d in shape)
        stride = value.stride() if callable(getattr(value, "stride", None)) else getattr(value, "strides", ())
        offset = value.storage_offset() if callable(getattr(value, "storage_offset", None)) else 0
        device = getattr(getattr(value, "device", None), "type", "cpu")
    except (TypeError, ValueError, RuntimeError):
        return None
    name = str(dtype).removeprefix("torch.")
    dims_text = ",".join(map(str, dims))
    stride_text = ",".join(map(str, stride))
    where = f"+{offset}" if offset else ""
    return f"{_SHORT.get(name, name)}[{dims_text}]({stride_text}){where}@{device}"
