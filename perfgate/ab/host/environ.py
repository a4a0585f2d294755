"""Each side's environment, without rewriting the process's.

The host used to rewrite os.environ at every hand-over (putenv / unsetenv of every key that differed),
while native threads (CUDA's, OpenMP's) may call getenv: a documented way to crash a process. Now the C
environment is never touched by a hand-over. What differs per side is the Python view only: os.environ's
mapping (shared with os.environb) is refilled in place, which getenv never reads. A side's keys (its pipes,
its build caches) are read by Python code (perfgate, Triton's and torch's cache lookups, the project's
kernels); native code and a child started without `env=` see the host's environment, which is the same for
every side.

What a side writes through os.environ (or os.putenv / os.unsetenv) reaches the C environment, and so every
other side's native code: a key the side does not own is a change the baton does not hand over, and ends
the shared comparison (fingerprint.py). A side owns its own keys and the ones its pytest session keeps for
itself (PYTEST_CURRENT_TEST, PYTEST_VERSION).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

PYTEST_OWN = ("PYTEST_CURRENT_TEST", "PYTEST_VERSION")  # set and removed by every pytest session for itself


def python_view() -> dict[bytes | str, bytes | str]:
    """os.environ's mapping as it is stored (encoded keys and values)."""
    return dict(os.environ._data)  # type: ignore[attr-defined]


def use_view(view: Mapping[Any, Any]) -> None:
    """Make `view` what os.environ (and os.environb) hold, in place, without putenv or unsetenv."""
    data = os.environ._data  # type: ignore[attr-defined]
    if data != view:
        data.clear()
        data.update(view)


def view_with(base: Mapping[Any, Any], extra: Mapping[str, str]) -> dict[Any, Any]:
    """`base` with `extra` set, encoded as os.environ stores them."""
    env: Any = os.environ
    out = dict(base)
    out.update({env.encodekey(k): env.encodevalue(v) for k, v in extra.items()})
    return out


class Writes:
    """Who wrote the C environment: os.putenv and os.unsetenv (what os.environ's item assignment and
    deletion call) wrapped, each write recorded with the thread that made it."""

    def __init__(self) -> None:
        self.log: list[tuple[int | None, str]] = []  # (thread ident, key)
        self._lock = threading.Lock()

    def install(self) -> None:
        os.putenv = self._watched(os.putenv)
        os.unsetenv = self._watched(os.unsetenv)

    def _watched(self, original: Callable[..., None]) -> Callable[..., None]:
        def watched(key: Any, *value: Any) -> None:
            name = os.fsdecode(key) if isinstance(key, (bytes, str)) else str(key)
            if name not in PYTEST_OWN:  # every session's own, every test: not worth keeping
                with self._lock:
                    self.log.append((threading.get_ident(), name))
            original(key, *value)

        return watched

    def by(self, thread: int | None, since: int, owned: frozenset[str]) -> list[str]:
        """The keys that thread wrote since log position `since`, but those it owns."""
        with self._lock:
            keys = [k for t, k in self.log[since:] if t == thread and k not in owned]
        return list(dict.fromkeys(keys))

    @property
    def position(self) -> int:
        return len(self.log)
