"""Triton's autotuner, made visible and optionally held still.

Autotuned kernels (matmul, attention) benchmark their candidate configs again in every process and may
pick another one: 3-7% between processes on the H100 even with the power state controlled. perfgate
records the config each autotuned kernel chose for each case (history, baseline, summary; a changed
choice is named as a likely cause), and with `pin_autotune` it restricts each autotuner to the config
the baseline recorded, so autotuning stops being noise.

Only the first call of a case runs with Autotuner.run wrapped; pinned autotuners keep a one-config list
(Triton then skips tuning entirely) until the case ends, and get their full list back after it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping
from typing import Any


class AutotuneWatch:
    def __init__(self, pins: Mapping[str, str] | None = None) -> None:
        self.pins = dict(pins or {})
        self.chosen: dict[str, str] = {}
        self.problems: list[str] = []
        self._pinned: list[tuple[Any, list[Any]]] = []

    @contextlib.contextmanager
    def first_call(self) -> Iterator[None]:
        # only if the code under test already imported Triton: importing it here would cost every
        # host-timed case a second, and nothing can be autotuned without it
        module = sys.modules.get("triton.runtime.autotuner")
        if module is None:
            yield
            return
        Autotuner = module.Autotuner
        original = Autotuner.run
        watch = self

        def run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
            name = _kernel_name(tuner)
            if name in watch.pins and not any(t is tuner for t, _ in watch._pinned):
                watch._pin(tuner, name)
            result = original(tuner, *args, **kwargs)
            if getattr(tuner, "best_config", None) is not None:
                watch.chosen[name] = str(tuner.best_config)
            return result

        Autotuner.run = run
        try:
            yield
        finally:
            Autotuner.run = original

    def _pin(self, tuner: Any, name: str) -> None:
        wanted = self.pins[name]
        match = [c for c in tuner.configs if str(c) == wanted]
        if not match:
            self.problems.append(f"{name}: the baseline's config is no longer a candidate ({wanted}); not pinned")
            return
        self._pinned.append((tuner, list(tuner.configs)))
        tuner.configs = match[:1]

    def release(self) -> None:
        """Give pinned autotuners their candidate lists back (other cases may tune freely)."""
        for tuner, configs in self._pinned:
            tuner.configs = configs
        self._pinned.clear()

    def choices(self) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(self.chosen.items()))


def _kernel_name(tuner: Any) -> str:
    fn = getattr(tuner, "base_fn", None) or getattr(tuner, "fn", None)
    return str(getattr(fn, "__name__", type(tuner).__name__))
