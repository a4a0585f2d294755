"""What a perf test passes to `perfgate(...)`, `perfgate.measure(...)`, `perfgate.work(...)` and the
`benchmark` fixture, checked where the test calls it (issue 32).

A value the history cannot hold or the gate cannot mean (flops=10**30, a NaN or negative bytes_moved, a case
name with a newline, a min_speedup of 0) used to pass the call and end the whole run at store time, every
other case lost with it. Here it is one line that fails that test (`pytest.fail(..., pytrace=False)` in
the fixture); nothing of it is recorded, and every other case is stored and gated.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from perfgate.errors import PerfgateError
from perfgate.model import Timer
from perfgate.parse.invariants import INT64_MAX, has_control

MAX_NAME_CHARS = 200
MAX_SPEEDUP = 1000.0  # [tool.perfgate]'s bound for min_speedup (config/validate.py SPEEDUP)


class ArgumentError(PerfgateError):
    """A value a perf test passed that perfgate cannot measure, store or gate."""


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fail(where: str, what: str, value: object) -> ArgumentError:
    return ArgumentError(f"perfgate: {where}: {what}, got {_shown(value)}")


def work_amount(value: object, where: str) -> int | None:
    """bytes_moved / flops: an integer in [0, 2**63) (an integral float such as 2e12 is taken as one)."""
    if value is None:
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
        raise _fail(where, "must be a whole number in [0, 2**63) (bytes or operations of one call)", value)
    return value


def case_name(value: object, where: str) -> str | None:
    """A case's name: text a log line and a Markdown cell can hold (no newline, escape or other control)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME_CHARS:
        raise _fail(where, f"must be non-empty text of at most {MAX_NAME_CHARS} characters", value)
    if has_control(value):
        raise _fail(where, "must not hold a control character (a newline, an escape...)", value)
    return value


def tolerance(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value) or value < 0:
        raise _fail(where, "must be a finite number >= 0", value)
    return float(value)


def speedup_target(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
        raise _fail(where, f"must be a finite number in (0, {MAX_SPEEDUP:g}]", value)
    if not 0 < value <= MAX_SPEEDUP:
        raise _fail(where, f"must be a finite number in (0, {MAX_SPEEDUP:g}]", value)
    return float(value)


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past float's range
        return False


def callable_or_none(value: object, where: str, required: bool) -> None:
    if (value is not None or required) and not callable(value):
        raise _fail(where, "must be a callable", value)


def needs_reference(reference: object, where: str, **uses: object) -> None:
    """check=True and min_speedup compare with the reference: without one they could never be checked."""
    if reference is None:
        for name, value in uses.items():
            if value not in (None, False):
                raise _fail(f"{where} {name}", "needs a reference= callable to compare with", value)


def call_arguments(args: object, kwargs: object, where: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if not isinstance(args, (tuple, list)):
        raise _fail(f"{where} args", "must be a tuple of positional arguments", args)
    if kwargs is not None and not (isinstance(kwargs, Mapping) and all(isinstance(k, str) for k in kwargs)):
        raise _fail(f"{where} kwargs", "must be a mapping of keyword arguments", kwargs)
    return tuple(args), dict(kwargs or {})


def timer(value: object, where: str) -> Timer | None:
    if value is None or isinstance(value, Timer):
        return value
    raise _fail(where, f"must be one of {', '.join(t.name for t in Timer)} (perfgate.model.Timer) or None", value)


def flag(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(where, "must be True or False", value)
    return value


def group(value: object, where: str) -> str:
    """pytest-benchmark's `benchmark.group`: text (None is no group)."""
    if value is None:
        return ""
    if not isinstance(value, str) or has_control(value) or len(value) > MAX_NAME_CHARS:
        raise _fail(where, f"must be text of at most {MAX_NAME_CHARS} characters without control characters", value)
    return value


def extra_info(value: object, where: str) -> dict[str, Any]:
    """pytest-benchmark's `benchmark.extra_info`: what can be saved as strict JSON. Other objects are kept as
    their str() (as pytest-benchmark saves them); NaN, infinities and integers past int64 are refused: no
    strict JSON (results, history export) could hold them."""
    if not isinstance(value, Mapping):
        raise _fail(where, "must be a dict", value)
    doc = json.loads(json.dumps(dict(value), default=str))
    bad = _bad_json_number(doc)
    if bad is not None:
        raise _fail(where, "holds a number strict JSON cannot hold (NaN, an infinity, an integer past 2**63)", bad)
    return {str(k): v for k, v in doc.items()}


def params(values: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """A test's parameters as pytest-benchmark saves them: JSON values as they are, any other object (or a
    number strict JSON cannot hold) as "UNSERIALIZABLE[repr]" (its SafeJSONEncoder's form), bounded."""
    out = []
    for name, value in (values or {}).items():
        try:
            doc = json.loads(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError, RecursionError):
            doc = None
        else:
            if _bad_json_number(doc) is None and len(json.dumps(doc)) <= 10_000:
                out.append((str(name), doc))
                continue
        out.append((str(name), f"UNSERIALIZABLE[{value!r}]"[:1000]))
    return tuple(out)


def _bad_json_number(doc: Any) -> Any:
    if isinstance(doc, float) and not math.isfinite(doc):
        return doc
    if isinstance(doc, int) and not isinstance(doc, bool) and not -INT64_MAX - 1 <= doc <= INT64_MAX:
        return doc
    items = doc.values() if isinstance(doc, dict) else doc if isinstance(doc, list) else ()
    return next((bad for bad in map(_bad_json_number, items) if bad is not None), None)
