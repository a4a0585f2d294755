"""What a side must not change: the process-wide state the baton does not hand over, fingerprinted when a
side takes the baton and again when it gives it back. Any difference ends the shared comparison
(baton.py): what one side changed there, the other would have run under.

Read by introspection, not from a list of known settings:

- every signal's handler (signal.valid_signals());
- the Python threads alive but the host's own (a thread a side leaves running keeps running, and taking
  CPU, during the other side's rounds);
- atexit callbacks registered by a tree's code (atexit.register watched; an installed library's own, such
  as torch._dynamo's on first import, is named in the host's log and allowed: it runs at exit, after every
  side);
- the interpreter's switches: thread switch interval, recursion limit, the garbage collector (enabled,
  thresholds), int-to-str digit limit, dlopen flags, byte-code writing, the global trace and profile hooks
  new threads get, the fault handler, the C locale;
- torch, once imported: every `torch._C._get_X()` the baton does not hand over (handover.py hands over
  those with a setter), the inter-op thread count, the CUDA allocator's backend and every call to a
  setter of its settings (torch.cuda.memory's `*allocator*` and `*memory_fraction*` setters watched), and
  torch's config modules where their values are module globals (in the torch of this writing they are
  context variables, per thread, so per side);
- the C environment: os.putenv / os.unsetenv of a key the side does not own (environ.py).
"""

from __future__ import annotations

import atexit
import contextlib
import enum
import faulthandler
import functools
import gc
import locale
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

Print = Mapping[str, Any]


@dataclass(frozen=True)
class Change:
    """One thing a side changed that the baton does not hand over."""

    what: str
    before: str
    after: str

    def __str__(self) -> str:
        return f"{self.what} ({self.before} -> {self.after})" if self.before else f"{self.what} ({self.after})"


class Watch:
    """Calls worth knowing about, recorded as they happen: atexit callbacks from a tree's code, CUDA
    allocator setters (they have no getter to read back)."""

    def __init__(self, from_a_tree: Callable[[Any], str]) -> None:
        self.from_a_tree = from_a_tree  # a callable -> the tree its code is in ("" outside every tree)
        self.calls: list[str] = []
        self.allowed: list[str] = []  # installed libraries' atexit callbacks: said, not refused

    def install(self) -> None:
        original = atexit.register

        def register(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
            name = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', type(func).__name__)}"
            (self.calls if self.from_a_tree(func) else self.allowed).append(f"atexit.register({name})")
            return original(func, *args, **kwargs)

        atexit.register = register  # type: ignore[assignment]
        self.watch_torch()

    def watch_torch(self) -> None:
        """The CUDA allocator's setters, once torch is imported (again when it is: idempotent)."""
        memory = sys.modules.get("torch.cuda.memory")
        if memory is None or getattr(memory, "_perfgate_watched", False):
            return
        for name, fn in list(vars(memory).items()):
            setter = name.lstrip("_").startswith(("set", "change"))
            if callable(fn) and setter and ("allocator" in name or "memory_fraction" in name):
                setattr(memory, name, self._recorded(f"torch.cuda.memory.{name}", fn))
        memory._perfgate_watched = True  # type: ignore[attr-defined]

    def _recorded(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(f"{name}({', '.join(map(repr, args))})")
            return fn(*args, **kwargs)

        return recorded


def take(handed: frozenset[str], host_threads: frozenset[int | None], watch: Watch) -> dict[str, Any]:
    """The fingerprint now (cheap: it is taken at every hand-over)."""
    out: dict[str, Any] = {}
    for name, read in _readers(host_threads, watch):
        with contextlib.suppress(Exception):  # what cannot be read is left out (and so never "changed")
            out[name] = read()
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "_C"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.update(_torch(torch, handed))
    return out


def _readers(host_threads: frozenset[int | None], watch: Watch) -> Iterator[tuple[str, Callable[[], Any]]]:
    yield "signal handlers", _handlers
    yield "Python threads", lambda: _threads(host_threads)
    yield "calls", lambda: tuple(watch.calls)
    yield "sys.getswitchinterval()", sys.getswitchinterval
    yield "sys.getrecursionlimit()", sys.getrecursionlimit
    yield "gc.isenabled()", gc.isenabled
    yield "gc.get_threshold()", gc.get_threshold
    yield "sys.get_int_max_str_digits()", sys.get_int_max_str_digits
    yield "sys.getdlopenflags()", sys.getdlopenflags
    yield "sys.dont_write_bytecode", lambda: sys.dont_write_bytecode
    yield "threading.gettrace()", threading.gettrace
    yield "threading.getprofile()", threading.getprofile
    yield "faulthandler.is_enabled()", faulthandler.is_enabled
    yield "the C locale", lambda: locale.setlocale(locale.LC_ALL)


def _handlers() -> dict[str, Any]:
    return {name: signal.getsignal(signum) for signum, name in _signals()}


@functools.cache
def _signals() -> tuple[tuple[int, str], ...]:
    return tuple((signum, _signal_name(signum)) for signum in sorted(signal.valid_signals()))


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:  # a real-time signal has no name of its own
        return f"signal {signum}"


def _threads(host: frozenset[int | None]) -> frozenset[tuple[int | None, str]]:
    return frozenset((t.ident, t.name) for t in threading.enumerate() if t.ident not in host)


def _torch(torch: Any, handed: frozenset[str]) -> Iterator[tuple[str, Any]]:
    for name, get in _flag_getters(torch._C):
        if f"torch._C.{name.removeprefix('_get_')}" not in handed:
            with contextlib.suppress(Exception):
                yield f"torch._C.{name}()", get()
    with contextlib.suppress(Exception):
        yield "torch.get_num_interop_threads()", torch.get_num_interop_threads()
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_initialized():
        with contextlib.suppress(Exception):
            yield "the CUDA allocator backend", cuda.get_allocator_backend()
    for name, module in _global_config_modules(len(sys.modules)):
        with contextlib.suppress(Exception):
            yield name, module.get_config_copy()


_CONFIGS: dict[int, tuple[tuple[str, Any], ...]] = {}  # sys.modules' size -> its config modules held as globals


def _global_config_modules(size: int) -> tuple[tuple[str, Any], ...]:
    """torch's config modules whose values are module globals, looked for again when sys.modules grew."""
    if size not in _CONFIGS:
        _CONFIGS.clear()
        _CONFIGS[size] = tuple(
            (name, m)
            for name, m in list(sys.modules.items())
            if type(m).__name__ == "ConfigModule" and not _per_context(m)
        )
    return _CONFIGS[size]


SCALARS = (bool, int, float, str, enum.Enum, type(None))
VOLATILE = ("caught", "stats", "cache")  # records of what happened (the last JIT error, cache counters), not settings


@functools.cache
def _flag_getters(c: Any) -> tuple[tuple[str, Callable[[], Any]], ...]:
    """torch._C's `_get_*` functions that answer a setting without arguments: a scalar (the version maps and
    dtype lists are tables, not settings)."""
    out = []
    for name in sorted(dir(c)):
        if not name.startswith("_get_") or any(word in name for word in VOLATILE):
            continue
        get = getattr(c, name)
        value = _answer(get)
        if isinstance(value, SCALARS) or (isinstance(value, tuple) and all(isinstance(v, SCALARS) for v in value)):
            out.append((name, get))
    return tuple(out)


def _answer(get: Callable[[], Any]) -> Any:
    """What a getter answers without arguments; a list (never a setting here) when it cannot."""
    try:
        return get()
    except Exception:  # noqa: BLE001 (needs arguments, or CUDA)
        return []


def _per_context(module: Any) -> bool:
    """torch's config modules keep overrides in context variables (per thread, so per side) in recent torch."""
    import contextvars

    entries = getattr(module, "_config", {})
    first = next(iter(entries.values()), None) if isinstance(entries, dict) else None
    return isinstance(getattr(first, "user_override", None), contextvars.ContextVar)


def changes(before: Print, after: Print) -> list[Change]:
    """What differs, named; a thread by its name."""
    out = []
    for name in sorted(set(before) | set(after)):
        was, now = before.get(name, "(not set)"), after.get(name, "(not set)")
        if _same(was, now):
            continue
        if name == "signal handlers" and isinstance(was, dict) and isinstance(now, dict):
            out += [
                Change(f"the {sig} handler", _short(was.get(sig)), _short(now.get(sig)))
                for sig in now
                if not _same(was.get(sig), now[sig])
            ]
        elif name == "Python threads" and isinstance(was, frozenset) and isinstance(now, frozenset):
            started = sorted(n for _, n in now - was)  # a thread that ended leaves nothing running
            out += [Change("Python threads", "", "started " + ", ".join(started))] if started else []
        elif name == "calls":
            out.append(Change("process-wide calls", "", "; ".join(now[len(was) :])))
        else:
            out.append(Change(name, _short(was), _short(now)))
    return out


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a is b or a == b)
    except Exception:  # noqa: BLE001
        return False


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
