"""What a number read from an outside file must mean before perfgate computes with it.

Type checks are not enough: a row can hold integers and still say a kernel ended before it started, or
hold durations whose sum wraps around int64 in numpy and comes out negative. Readers check meaning where
data enters, and each reader decides (and says why, where it decides) whether a row that breaks an
invariant refuses the file or is dropped with a counted note in the report. Nothing here knows a file
format; readers turn `OutOfRange` into a ReportFileError naming their file.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy loads only where arrays are summed: importing perfgate stays cheap
    import numpy as np
    from numpy.typing import NDArray


INT64_MAX = 2**63 - 1
# No time perfgate stores is longer than this (1e12 ms is 31 years): a stored 1e308 ms is not a measurement,
# and scaled to microseconds or turned into a change percentage it overflows to inf.
MAX_TIME_MS = 1e12
INT64_MIN = -(2**63)
# No memory moves faster than this: 100 TB/s (1e5 bytes per ns) is 12x the fastest HBM of 2025 (B200, 8 TB/s)
# and 50x NVLink 5 per GPU. A transfer of more bytes than this in its duration (a 0 ns one counted as 1 ns)
# is damaged: summed in, one such row made nsys print 1.1e15 GB/s.
MAX_BYTES_PER_NS = 100_000
IMPOSSIBLE_TRANSFER = f"faster than {MAX_BYTES_PER_NS // 1000} TB/s (no memory moves that fast)"


def plausible_transfer(nbytes: int, duration_ns: int) -> bool:
    return nbytes <= MAX_BYTES_PER_NS * max(duration_ns, 1)


_EXACT_SUM_BELOW = 2.0**62  # a float sum under this leaves room for its rounding: numpy's int64 sum cannot wrap


class OutOfRange(ValueError):
    """A value that cannot be true (a negative duration, a sum past int64, a share above 100 %)."""


def as_int64(value: Any) -> int | None:
    """An int that fits int64 (JSON integers can have thousands of digits; bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if INT64_MIN <= value <= INT64_MAX else None


def as_finite(value: Any) -> float | None:
    """A finite float from a JSON number, else None. Huge integers are not finite floats: float() of a
    400-digit integer raises OverflowError, so they are judged before converting."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if abs(value) < 2**1000 else None
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def exact_total(values: NDArray[np.int64], what: str) -> int:
    """The exact sum of non-negative int64 values; OutOfRange past int64 (numpy's sum wraps silently)."""
    if values.size == 0:
        return 0
    approx = float(values.sum(dtype="float64"))
    if approx < _EXACT_SUM_BELOW:
        return int(values.sum())
    return int64_total(sum(int(v) for v in values.tolist()), what)  # near the limit only: exact, in Python ints


def int64_total(total: int, what: str) -> int:
    if total > INT64_MAX:
        raise OutOfRange(f"{what} sum to {total:.3g}, past the int64 range (2**63): not a real capture")
    return total


# control characters, and lone surrogates: `"\ud800"` is valid JSON, but no UTF-8 writer (Markdown, a
# terminal, a chart's font, SQLite) can encode it, so a name holding one broke analyze halfway through
_CONTROL = {c: 0xFFFD for c in (*range(0x20), *range(0x7F, 0xA0), *range(0xD800, 0xE000))}


def printable(name: str) -> str:
    """A name from a file with its control characters (NUL, ESC, newlines...) and lone surrogates replaced by
    U+FFFD: no kernel or range name has them, and they would reach terminals, Markdown and charts."""
    return name if name.isprintable() else name.translate(_CONTROL)


def has_control(name: str) -> bool:
    """Whether a name holds a character `printable` would replace: a stored id with one is refused, since a
    newline in it starts a line of its own in a CI log (`::error::...`) or breaks a Markdown table."""
    return not name.isprintable() and any(ord(c) in _CONTROL for c in name)


def within(value: float, low: float, high: float) -> float:
    """A statistic the arithmetic says lies in [low, high] (a mean, a median of int64 values), kept there:
    float rounding of values above 2**53 can put it a few ulps outside."""
    return min(max(value, low), high)


class DropCount:
    """Rows a reader left out, by reason, rendered as notes in the report ("12 ... ignored"); and rows it
    kept but could not read whole, with a note of their own (`note`)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._kept: list[str] = []

    def add(self, reason: str, count: int = 1) -> None:
        if count:
            self._counts[reason] += count

    def note(self, text: str) -> None:
        self._kept.append(text)

    def notes(self) -> tuple[str, ...]:
        return tuple(f"{n:,} {reason} ignored" for reason, n in sorted(self._counts.items())) + tuple(self._kept)
