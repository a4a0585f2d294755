"""Correctness beside speed: with `check=True` the candidate's output must agree with the reference's,
once, before anything is timed. A fast but wrong kernel fails its test instead of passing the gate."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


class OutputMismatch(AssertionError):
    """The candidate disagreed with its reference (an assertion: pytest reports the test as failed)."""


def check_outputs(
    candidate: Any, reference: Any, rtol: float | None, atol: float | None, where: str = "output"
) -> None:
    """Raise OutputMismatch naming where the outputs differ; tolerances default per dtype (torch) or to
    numpy's allclose defaults."""
    if _is_tensor(candidate) or _is_tensor(reference):
        _check_tensor(candidate, reference, rtol, atol, where)
    elif _is_array(candidate) or _is_array(reference):
        _check_array(candidate, reference, rtol, atol, where)
    elif isinstance(candidate, Mapping) and isinstance(reference, Mapping):
        if set(candidate) != set(reference):
            raise OutputMismatch(
                f"{where}: keys differ: {sorted(map(str, candidate))} vs {sorted(map(str, reference))}"
            )
        for key in candidate:
            check_outputs(candidate[key], reference[key], rtol, atol, f"{where}[{key!r}]")
    elif (
        isinstance(candidate, Sequence) and isinstance(reference, Sequence) and not isinstance(candidate, (str, bytes))
    ):
        if len(candidate) != len(reference):
            raise OutputMismatch(f"{where}: {len(candidate)} items vs {len(reference)} from the reference")
        for i, (c, r) in enumerate(zip(candidate, reference)):
            check_outputs(c, r, rtol, atol, f"{where}[{i}]")
    elif isinstance(candidate, float) or isinstance(reference, float):
        if not math.isclose(
            candidate, reference, rel_tol=1e-5 if rtol is None else rtol, abs_tol=1e-8 if atol is None else atol
        ):
            raise OutputMismatch(f"{where}: {candidate!r} vs reference {reference!r}")
    elif candidate != reference:
        raise OutputMismatch(f"{where}: {candidate!r} vs reference {reference!r}")


def _is_tensor(x: object) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "dtype") and hasattr(x, "shape")


def _is_array(x: object) -> bool:
    return type(x).__module__.startswith("numpy") and hasattr(x, "shape")


def _check_tensor(candidate: Any, reference: Any, rtol: float | None, atol: float | None, where: str) -> None:
    import torch

    if rtol is None and atol is not None:
        rtol = 0.0
    if atol is None and rtol is not None:
        atol = 0.0
    try:
        torch.testing.assert_close(candidate, reference, rtol=rtol, atol=atol, equal_nan=True, check_device=False)
    except AssertionError as err:
        first = str(err).strip().splitlines()
        raise OutputMismatch(f"{where} disagrees with the reference: {' '.join(first[:3])}") from None


def _check_array(candidate: Any, reference: Any, rtol: float | None, atol: float | None, where: str) -> None:
    import numpy as np

    a, b = np.asarray(candidate), np.asarray(reference)
    if a.shape != b.shape:
        raise OutputMismatch(f"{where}: shape {a.shape} vs reference {b.shape}")
    if not np.allclose(a, b, rtol=1e-5 if rtol is None else rtol, atol=1e-8 if atol is None else atol, equal_nan=True):
        worst = float(np.nanmax(np.abs(a.astype(float) - b.astype(float)))) if a.size else 0.0
        raise OutputMismatch(f"{where} disagrees with the reference (largest difference {worst:.3g})")
