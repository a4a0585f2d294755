"""Samples as one packed array per (run, case): little-endian IEEE 754 float64 in measurement order.

8 bytes a sample, against ~106 for a row per sample with its key and index (schema 2). Any reader decodes
it without perfgate: `numpy.frombuffer(blob, "<f8")`, or `struct.unpack(f"<{len(blob) // 8}d", blob)`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

ITEM_BYTES = 8


def pack_f64(values: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(values)}d", *values)


def unpack_f64(blob: object) -> tuple[float, ...]:
    """The samples of a packed array; ValueError when the value is not one (wrong type or length)."""
    if blob is None:
        return ()
    if not isinstance(blob, bytes) or len(blob) % ITEM_BYTES:
        raise ValueError(f"a packed sample array must be a BLOB of 8-byte floats, got {_shown(blob)}")
    return struct.unpack(f"<{len(blob) // ITEM_BYTES}d", blob)


def _shown(value: object) -> str:
    if isinstance(value, bytes):
        return f"{len(value)} bytes"
    return type(value).__name__
