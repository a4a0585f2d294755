"""Validators for every value read from `[tool.perfgate]`, markers and options: one clear line per problem.

A gate that reads `threshold_pct = nan` as "never regress" passes without checking anything, so every
number is checked for type, finiteness and range before it reaches Settings.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from perfgate.errors import ConfigError
from perfgate.model import AllowedMissing
from perfgate.store.target import HistoryTarget, ServerUrl, history_target

Parser = Callable[[object, str], Any]
E = TypeVar("E", bound=enum.Enum)


def _fail(where: str, what: str, value: object) -> ConfigError:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return ConfigError(f"perfgate: {where}: must be {what}, got {shown}")


def number(
    low: float | None = None, high: float | None = None, low_open: bool = False, high_open: bool = False
) -> Parser:
    """A finite int/float within [low, high] (open ends where asked); bools and strings are refused."""
    what = "a finite number" + _range_text(low, high, low_open, high_open)

    def parse(value: object, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
            raise _fail(where, what, value)
        v = float(value)
        if low is not None and (v < low or (low_open and v == low)):
            raise _fail(where, what, value)
        if high is not None and (v > high or (high_open and v == high)):
            raise _fail(where, what, value)
        return v

    return parse


def _finite(value: int | float) -> bool:
    """A float that is not inf/nan, or an int a float can hold (10**400 is neither: float() overflows)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _range_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    return (" " + " and ".join(parts)) if parts else ""


def integer(low: int, high: int | None = None) -> Parser:
    what = f"an integer >= {low}" + (f" and <= {high}" if high is not None else "")

    def parse(value: object, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
            raise _fail(where, what, value)
        return int(value)

    return parse


def boolean(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(where, "true or false", value)
    return value


def text(value: object, where: str) -> str:
    if not isinstance(value, str) or "\x00" in value:
        raise _fail(where, "a string", value)
    return value


def nonempty_text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise _fail(where, "a non-empty string", value)
    return value


def path(value: object, where: str) -> Path:
    if isinstance(value, Path):
        return value
    return Path(nonempty_text(value, where))


def history(value: object, where: str) -> HistoryTarget:
    """The history: a SQLite path, or a postgresql:// URL (a ServerUrl, whose text hides the password)."""
    if isinstance(value, (Path, ServerUrl)):
        return value
    try:
        return history_target(nonempty_text(value, where))
    except ValueError as err:
        raise ConfigError(f"perfgate: {where}: {err}") from None


def choice(kind: type[E]) -> Callable[[object, str], E]:
    """One of an enum's values, by its text (or the member itself)."""
    what = "one of " + ", ".join(repr(m.value) for m in kind)

    def parse(value: object, where: str) -> E:
        if isinstance(value, kind):
            return value
        for member in kind:
            if value == member.value:
                return member
        raise _fail(where, what, value)

    return parse


def text_list(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _fail(where, "a list of non-empty strings", value)
    return tuple(value)


# Bounds that keep a gate a gate: a threshold of 1e300%, a false-alarm budget of 1e-17 or a floor of 1e12%
# would pass a 10x slower case while every value "validates".
THRESHOLD = number(0.0, 100.0)
MIN_EFFECT = number(0.0, 50.0)
FALSE_ALARM = number(0.01, 5.0)
SPEEDUP = number(0.0, 1000.0, low_open=True)
CEILING = number(1.0, 100.0)  # a strict gate fails a process this much slower, whatever else it says
POSITIVE = number(0.0, 1e9, low_open=True)


def metric_table(known: Callable[[str], bool]) -> Parser:
    """{metric name: threshold_pct}; names must be metrics perfgate collects."""

    def parse(value: object, where: str) -> tuple[tuple[str, float], ...]:
        if not isinstance(value, dict):
            raise _fail(where, "a table of metric name = threshold_pct", value)
        out = []
        for name, pct in value.items():
            if not isinstance(name, str) or not known(name):
                raise ConfigError(
                    f"perfgate: {where}: unknown metric {name!r} (see perfgate/metrics.py; "
                    f"an ncu metric outside the catalogue must be listed in ncu_metrics)"
                )
            out.append((name, THRESHOLD(pct, f"{where}.{name}")))
        return tuple(sorted(out))

    return parse


def check_keys(table: dict[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in table if k not in known)
    if unknown:
        raise ConfigError(f"perfgate: {where}: unknown key(s) {unknown}; known: {sorted(known)}")


def allowed_missing(value: object, where: str) -> tuple[AllowedMissing, ...]:
    """`[{pattern = "...", reason = "..."}, ...]`: baseline cases a strict gate may miss, each with a reason."""
    if isinstance(value, tuple) and all(isinstance(v, AllowedMissing) for v in value):
        return value
    if not isinstance(value, list):
        raise _fail(where, 'a list of {pattern = "...", reason = "..."} tables', value)
    out = []
    for i, entry in enumerate(value):
        here = f"{where}[{i}]"
        if not isinstance(entry, dict):
            raise _fail(here, 'a table {pattern = "...", reason = "..."}', entry)
        check_keys(entry, {"pattern", "reason"}, here)
        if "reason" not in entry or "pattern" not in entry:
            raise ConfigError(f"perfgate: {here}: needs a 'pattern' and a 'reason' (why these cases may go unmeasured)")
        out.append(
            AllowedMissing(
                nonempty_text(entry["pattern"], f"{here} pattern"), nonempty_text(entry["reason"], f"{here} reason")
            )
        )
    return tuple(out)
