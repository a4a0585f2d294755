"""Process-wide settings a tree's code or its pytest configuration may change, kept per side of a shared
A/B host (perfgate/ab/host/shared.py) and handed over with the baton: pytest's per-test warning filters and log
capture, and torch's global switches. A conftest that sets torch's default dtype to float64 must not make
the other tree's code run in float64; a side that never set one finds it as a fresh process has it.

A registry: a setting is a name, whether it applies (its module imported), how to read it, how to put it
back, and its value in a fresh process.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProcessSetting:
    """A process-wide setting a tree's code or its pytest configuration may change, kept per side."""

    name: str
    applies: Callable[[], bool]  # its module is imported
    get: Callable[[], Any]
    put: Callable[[Any], None]
    pristine: Callable[[], Any]  # its value in a fresh process
    quiet: bool = True  # read and set with warnings ignored (torch's switches may warn); not the warnings' own


def _warnings_state() -> tuple[Any, Any, Any]:
    return (warnings.filters, warnings.showwarning, warnings._showwarnmsg_impl)  # type: ignore[attr-defined]


def _put_warnings(state: tuple[Any, Any, Any]) -> None:
    warnings.filters, warnings.showwarning, warnings._showwarnmsg_impl = state  # type: ignore[attr-defined]
    warnings._filters_mutated()  # type: ignore[attr-defined]


_WARNINGS_AT_BOOT: list[tuple[Any, Any, Any]] = []  # the host's, before any side ran
_LOGGING_AT_BOOT: list[tuple[list[Any], int]] = []


def _root_logging() -> tuple[list[Any], int]:
    return (list(logging.root.handlers), logging.root.level)


def _put_root_logging(state: tuple[list[Any], int]) -> None:
    logging.root.handlers[:] = state[0]
    logging.root.setLevel(state[1])


def _torch_setting(
    name: str, get: Callable[[Any], Any], put: Callable[[Any, Any], None], default: Any
) -> ProcessSetting:
    def torch() -> Any:
        return sys.modules["torch"]

    return ProcessSetting(
        name,
        lambda: "torch" in sys.modules and hasattr(sys.modules["torch"], "get_default_dtype"),
        lambda: get(torch()),
        lambda value: put(torch(), value),
        lambda: default(torch()) if callable(default) else default,
    )


# torch.backends switches, as (module path under torch.backends, attribute), and their defaults
BACKEND_FLAGS = (
    (("cudnn",), "benchmark", False),
    (("cudnn",), "deterministic", False),
    (("cudnn",), "allow_tf32", True),
    (("cuda", "matmul"), "allow_tf32", False),
    (("cuda", "matmul"), "allow_fp16_reduced_precision_reduction", True),
    (("cuda", "matmul"), "allow_bf16_reduced_precision_reduction", True),
)


def _backend(t: Any, path: tuple[str, ...]) -> Any:
    owner = t.backends
    for name in path:
        owner = getattr(owner, name)
    return owner


def _get_backends(t: Any) -> tuple[bool, ...]:
    return tuple(bool(getattr(_backend(t, path), attr)) for path, attr, _ in BACKEND_FLAGS)


def _put_backends(t: Any, values: tuple[bool, ...]) -> None:
    for (path, attr, _), value in zip(BACKEND_FLAGS, values):
        setattr(_backend(t, path), attr, value)


# pytest's per-test warning filters and log capture, and torch's global switches: a conftest that sets
# torch's default dtype to float64 must not make the other tree's code run in float64
PROCESS_STATE: tuple[ProcessSetting, ...] = (
    ProcessSetting("warnings", lambda: True, _warnings_state, _put_warnings, lambda: _WARNINGS_AT_BOOT[0], quiet=False),
    ProcessSetting("root logger", lambda: True, _root_logging, _put_root_logging, lambda: _LOGGING_AT_BOOT[0]),
    _torch_setting(
        "torch default dtype", lambda t: t.get_default_dtype(), lambda t, v: t.set_default_dtype(v), lambda t: t.float32
    ),
    _torch_setting(
        "torch float32 matmul precision",
        lambda t: t.get_float32_matmul_precision(),
        lambda t, v: t.set_float32_matmul_precision(v),
        "highest",
    ),
    _torch_setting(
        "torch deterministic algorithms",
        lambda t: (t.are_deterministic_algorithms_enabled(), t.is_deterministic_algorithms_warn_only_enabled()),
        lambda t, v: t.use_deterministic_algorithms(v[0], warn_only=v[1]),
        (False, False),
    ),
    _torch_setting(
        "torch backend switches", _get_backends, _put_backends, tuple(default for _, _, default in BACKEND_FLAGS)
    ),
)


def get_settings() -> dict[str, Any]:
    got: dict[str, Any] = {}
    for item in PROCESS_STATE:  # the warnings' state first, before a filter below is pushed
        if not item.quiet:
            _read(item, got)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for item in PROCESS_STATE:
            if item.quiet:
                _read(item, got)
    return got


def put_settings(saved: dict[str, Any]) -> None:
    """A side's own values back; what it never set, as a fresh process has it. The warnings' state last,
    once the filter pushed here is gone."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for item in PROCESS_STATE:
            if item.quiet:
                _write(item, saved)
    for item in PROCESS_STATE:
        if not item.quiet:
            _write(item, saved)


def _read(item: ProcessSetting, into: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):  # a setting that cannot be read is left shared
        if item.applies():
            into[item.name] = item.get()


def _write(item: ProcessSetting, saved: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):
        if item.name in saved:
            item.put(saved[item.name])
        elif item.applies():
            item.put(item.pristine())


def remember_boot_state() -> None:
    """The host's warnings and root logger before any side ran: what a side that never changed them gets."""
    _WARNINGS_AT_BOOT[:] = [(list(warnings.filters), warnings.showwarning, warnings._showwarnmsg_impl)]  # type: ignore[attr-defined]
    _LOGGING_AT_BOOT[:] = [_root_logging()]
