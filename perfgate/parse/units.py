"""ncu's CSV writes auto-scaled units (us, Mbyte, Tbyte/s, Ghz, sector/ns); bring them to the base
units that ncu_report returns (ns, byte, byte/s, hz, sector/s), so both readers agree."""

from __future__ import annotations

import functools
import re

_SI = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
# numerator: unit -> (base unit, factor)
_TIME_NUM = {
    "ns": ("ns", 1.0),
    "nsecond": ("ns", 1.0),
    "us": ("ns", 1e3),
    "usecond": ("ns", 1e3),
    "ms": ("ns", 1e6),
    "msecond": ("ns", 1e6),
    "s": ("ns", 1e9),
    "second": ("ns", 1e9),
}
# denominator: per-time -> per second
_TIME_DEN = {"ns": 1e9, "nsecond": 1e9, "us": 1e6, "usecond": 1e6, "ms": 1e3, "msecond": 1e3, "s": 1.0, "second": 1.0}


def _scale_part(part: str) -> tuple[str, float]:
    for base in ("byte", "hz"):
        if part == base:
            return part, 1.0
        if len(part) == len(base) + 1 and part[1:].lower() == base and part[0].upper() in _SI:
            return base, _SI[part[0].upper()]
    return part, 1.0


def to_base_unit(value: float, unit: str) -> tuple[float, str]:
    """(value, unit) in base units: 15.648 us -> 15648 ns; 2.345 Tbyte/s -> 2.345e12 byte/s."""
    factors, base = unit_scale(unit)
    for factor in factors:
        value *= factor
    return value, base


@functools.lru_cache(maxsize=4096)
def unit_scale(unit: str) -> tuple[tuple[float, ...], str]:
    """The factors (applied left to right, as one multiplication each) and the base unit of a unit."""
    if not unit:
        return (), unit
    num, _, den = unit.partition("/")
    if not den and num in _TIME_NUM:
        base, factor = _TIME_NUM[num]
        return (factor,), base
    num_base, num_factor = _scale_part(num)
    if not den:
        return (num_factor,), num_base
    if den in _TIME_DEN:
        return (num_factor, _TIME_DEN[den]), f"{num_base}/s"
    den_base, den_factor = _scale_part(den)
    # ncu scales a prefixed denominator the same way as a numerator (1.591 %/Kbyte is 1591 %/byte in
    # ncu_report); follow it, so CSV and report agree.
    return (num_factor, den_factor), f"{num_base}/{den_base}"


# ncu writes numbers in the C locale with thousands grouped by commas: "4,096", "1,980,000.5"
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][+-]?\d+)?")
# anything else with a comma in it is not ncu's: "1,5", "1.234,5" (a decimal comma: German, French...), "1,2,3"
_NUMERIC = re.compile(r"[-+0-9.,eE]+")


class LocaleNumber(ValueError):
    """A number written with a decimal comma: read in the C locale it would be another number."""


def ungrouped(text: str) -> str:
    """'1,980,000' -> '1980000'; a comma that is not C-locale grouping raises LocaleNumber."""
    t = text.strip()
    if "," in t and _NUMERIC.fullmatch(t) and not _GROUPED.fullmatch(t):
        raise LocaleNumber(t)
    return t.replace(",", "")


def parse_number(text: str) -> float | None:
    """'4,096' -> 4096.0; '' or 'n/a' -> None (absent, not 0). A number in another locale's format ('1,5',
    '1.234,5', '1.980.000': 1.5, 1234.5 and 1980000 there) raises LocaleNumber: read here it would be another
    number, or none."""
    t = ungrouped(text)
    if not t or t.lower() in {"n/a", "nan", "-"}:
        return None
    try:
        return float(t)
    except ValueError:
        if _NUMERIC.fullmatch(t):
            raise LocaleNumber(t) from None
        return None
