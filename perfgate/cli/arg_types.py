"""argparse types for the commands' own numbers, checked by the same validators as `[tool.perfgate]`: a
value out of range (nan, inf, 1e20 days, a run id past SQLite's 64-bit integers) is one argparse error
line and exit 2, never an OverflowError from the code that uses it."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from perfgate.config import validate as v
from perfgate.errors import ConfigError

INT64_MAX = 2**63 - 1  # SQLite's largest integer: a run id or a LIMIT past it overflows
MAX_AGE_DAYS = 36500.0  # a century; `now - 1e6 days` is before year 1, which datetime cannot hold


def _checked(convert: Callable[[str], object], check: v.Parser, what: str) -> Callable[[str], object]:
    def parse(text: str) -> object:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        try:
            return check(value, "")
        except ConfigError as err:  # the validator's own words, without its "perfgate: <where>: " prefix
            raise argparse.ArgumentTypeError(str(err).removeprefix("perfgate: : ")) from None

    parse.__name__ = what  # argparse names the type in some messages
    return parse


def integer(low: int, high: int = INT64_MAX) -> Callable[[str], object]:
    return _checked(int, v.integer(low, high), f"an integer >= {low} and <= {high}")


def number(low: float, high: float) -> Callable[[str], object]:
    return _checked(float, v.number(low, high), f"a finite number >= {low:g} and <= {high:g}")


RUN_ID = integer(1)
COUNT = integer(0)
AGE_DAYS = number(0.0, MAX_AGE_DAYS)
