"""Process-wide state handed over with the baton: each side keeps its own value while another runs, and a
side that never set one finds it as the host had it before any side ran (what a fresh process has).

Found by introspection where the state is a family, not listed by hand:

- torch's global flags: every `torch._C._get_X` with a `_set_X` sibling that answers without arguments
  (ATen's global context: cuDNN enabled / benchmark / deterministic / TF32, cuBLAS reduced precision,
  preferred BLAS and linalg libraries, float32 matmul precision, deterministic algorithms...), every getter /
  setter pair among the functions of torch.backends' modules (`X_enabled`/`enable_X` for the SDPA kernels,
  `X_allowed`/`allow_X`, `get_X`/`set_X`, `preferred_X()`/`preferred_X(v)`), and every settable property of
  those modules (torch.backends.cudnn.benchmark_limit...); torch's default dtype and intra-op thread count;
- the interpreter's: warning filters, the whole logging manager (every logger's level, handlers,
  propagation, filters, and `logging.disable`), the import system (sys.meta_path, sys.path_hooks,
  sys.path_importer_cache: each pytest session's assertion-rewriting hook is its own), and the exception and
  display hooks.

Thread-local state needs nothing: each side runs in a thread of its own (torch's default device, grad and
autocast modes, the torch-function mode stack, cuDNN's and cuBLAS' handles and cuDNN's plan cache).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import sys
import threading
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

# torch._C getters whose state is per thread already (each side is a thread): never handed over
THREAD_LOCAL = frozenset({"thread_name", "torch_function_state", "tracing_state", "graph_exec_group", "dispatch_mode"})


@dataclass(frozen=True)
class Handed:
    """One piece of process-wide state, kept per side."""

    name: str
    get: Callable[[], Any]
    put: Callable[[Any], None]
    quiet: bool = True  # read and set with warnings ignored (torch's setters may warn); not the warnings' own


# --- the interpreter ------------------------------------------------------------------------------------


def _warnings_state() -> tuple[Any, Any, Any]:
    # the list object itself: a catch_warnings() block of the side's keeps it to put back, so it stays its own
    return (warnings.filters, warnings.showwarning, warnings._showwarnmsg_impl)  # type: ignore[attr-defined]


def _put_warnings(state: tuple[Any, Any, Any]) -> None:
    warnings.filters, warnings.showwarning, warnings._showwarnmsg_impl = state  # type: ignore[attr-defined]
    warnings._filters_mutated()  # type: ignore[attr-defined]


LoggerState = tuple[int, list[Any], bool, bool, list[Any]]
DEFAULT_LOGGER: LoggerState = (logging.NOTSET, [], True, False, [])


def _loggers() -> Iterator[tuple[str, logging.Logger]]:
    yield "", logging.root
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            yield name, logger


def _logging_state() -> tuple[int, dict[str, LoggerState]]:
    loggers = {
        name: (lg.level, list(lg.handlers), lg.propagate, lg.disabled, list(lg.filters)) for name, lg in _loggers()
    }
    return logging.root.manager.disable, loggers


def _put_logging(state: tuple[int, dict[str, LoggerState]]) -> None:
    disable, saved = state
    for name, logger in _loggers():
        level, handlers, propagate, disabled, filters = saved.get(name, DEFAULT_LOGGER)
        logger.level, logger.propagate, logger.disabled = level, propagate, disabled
        logger.handlers[:] = handlers
        logger.filters[:] = filters
    logging.root.manager.disable = disable
    logging.root.manager._clear_cache()  # type: ignore[attr-defined]  # isEnabledFor caches the levels


def _put_list(target: list[Any]) -> Callable[[list[Any]], None]:
    def put(value: list[Any]) -> None:
        target[:] = value

    return put


def _put_importer_cache(value: dict[str, Any]) -> None:
    sys.path_importer_cache.clear()
    sys.path_importer_cache.update(value)


def _hooks() -> tuple[Any, Any, Any, Any]:
    return sys.excepthook, sys.unraisablehook, sys.displayhook, threading.excepthook


def _put_hooks(value: tuple[Any, Any, Any, Any]) -> None:
    sys.excepthook, sys.unraisablehook, sys.displayhook, threading.excepthook = value


INTERPRETER: tuple[Handed, ...] = (
    Handed("warning filters", _warnings_state, _put_warnings, quiet=False),
    Handed("logging", _logging_state, _put_logging),
    Handed("sys.meta_path", lambda: list(sys.meta_path), _put_list(sys.meta_path)),
    Handed("sys.path_hooks", lambda: list(sys.path_hooks), _put_list(sys.path_hooks)),
    Handed("sys.path_importer_cache", lambda: dict(sys.path_importer_cache), _put_importer_cache),
    Handed("exception and display hooks", _hooks, _put_hooks),
)


# --- torch, found by introspection ----------------------------------------------------------------------


def _torch_c_pairs(torch: Any) -> Iterator[Handed]:
    """torch._C._get_X / _set_X: ATen's global flags."""
    c = torch._C
    names = set(dir(c))
    for name in sorted(names):
        flag = name.removeprefix("_get_")
        if flag == name or flag in THREAD_LOCAL or f"_set_{flag}" not in names:
            continue
        put = _settable(getattr(c, name), getattr(c, f"_set_{flag}"))
        if put is not None:
            yield Handed(f"torch._C.{flag}", getattr(c, name), put)


def _settable(get: Callable[[], Any], put: Callable[..., Any]) -> Callable[[Any], None] | None:
    """How to put back what `get()` answers (the value, or a tuple's items as arguments: cuBLAS' reduced
    precision flags); None when the getter needs arguments or the setter takes none of those."""
    try:
        value = get()
    except Exception:  # noqa: BLE001 (a getter that needs arguments, or CUDA: not a flag to hand over)
        return None
    forms: tuple[Callable[[Any], None], ...] = (put, lambda v: put(*v))
    for form in forms:
        if _accepts(form, value):
            return form
    return None


def _accepts(put: Callable[[Any], None], value: Any) -> bool:
    try:
        put(value)
    except Exception:  # noqa: BLE001 (TypeError mostly: the setter's arguments are another shape)
        return False
    return True


def _backend_modules(torch: Any) -> Iterator[tuple[str, Any]]:
    """torch.backends and its submodules (PropModule wrappers included), never other objects: their
    attributes may initialise CUDA (cufft_plan_cache)."""
    todo, seen = [("torch.backends", torch.backends)], set()
    while todo:
        path, module = todo.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        yield path, module
        for name, value in list(vars(module).items()):
            if isinstance(value, types.ModuleType) and value.__name__.startswith("torch.backends."):
                todo.append((f"{path}.{name}", value))


def setter_of(getter: str) -> str | None:
    """The setter's name for a getter's, among the functions of a torch.backends module."""
    if getter.endswith("_enabled"):
        return "enable_" + getter.removesuffix("_enabled")  # flash_sdp_enabled / enable_flash_sdp
    if getter.endswith("_allowed"):
        return "allow_" + getter.removesuffix("_allowed")
    if getter.startswith("get_"):
        return "set_" + getter.removeprefix("get_")
    if getter.startswith("preferred_"):
        return getter  # preferred_blas_library(): get; preferred_blas_library(v): set
    return None


def _backend_pairs(torch: Any) -> Iterator[Handed]:
    for path, module in _backend_modules(torch):
        functions = {n: f for n, f in vars(module).items() if inspect.isfunction(f) and not n.startswith("_")}
        for name, get in sorted(functions.items()):
            setter = setter_of(name)
            put = _settable(get, functions[setter]) if setter in functions else None
            if put is not None:
                yield Handed(f"{path}.{name}", get, put)
        for name, prop in sorted(vars(type(module)).items()):  # PropModule: settable properties
            if not name.startswith("_") and hasattr(prop, "__get__") and hasattr(prop, "__set__"):
                attribute = _attribute(path, module, name)
                if _settable(attribute.get, attribute.put) is not None:
                    yield attribute


def _attribute(path: str, owner: Any, name: str) -> Handed:
    return Handed(f"{path}.{name}", lambda: getattr(owner, name), lambda v: setattr(owner, name, v))


def _torch(torch: Any) -> Iterator[Handed]:
    yield Handed("torch default dtype", torch.get_default_dtype, torch.set_default_dtype)
    yield Handed(
        "torch deterministic algorithms",
        lambda: (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()),
        lambda v: torch.use_deterministic_algorithms(v[0], warn_only=v[1]),
    )
    yield Handed("torch intra-op threads", torch.get_num_threads, torch.set_num_threads)
    yield from _torch_c_pairs(torch)
    yield from _backend_pairs(torch)


def catalogue() -> tuple[Handed, ...]:
    """What is handed over now: the interpreter's state, and torch's once imported."""
    items = list(INTERPRETER)
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "backends") and hasattr(torch, "_C"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            items += list(_torch(torch))
    return tuple(items)


# --- per side -------------------------------------------------------------------------------------------


class Registry:
    """The state handed over in one host: its catalogue (grown when torch is first imported), the host's
    values before any side ran, and reading / putting back a side's."""

    def __init__(self, find: Callable[[], tuple[Handed, ...]] = catalogue) -> None:
        self.find = find
        self.items: tuple[Handed, ...] = ()
        self.pristine: dict[str, Any] = {}
        self._seen: tuple[bool, bool] = (False, False)
        self.refresh()

    def refresh(self) -> None:
        """Catalogue again when torch arrived; its values then are what a side finds that never set them (a
        tree that imports torch has it imported before any side runs: process._preload)."""
        seen = ("torch" in sys.modules, "torch.backends.cuda" in sys.modules)
        if seen == self._seen and self.items:
            return
        self._seen = seen
        self.items = self.find()
        for name, value in self.read().items():
            self.pristine.setdefault(name, value)

    def read(self) -> dict[str, Any]:
        got: dict[str, Any] = {}
        for item in self.items:  # the warnings' state first, before a filter below is pushed
            if not item.quiet:
                _read(item, got)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for item in self.items:
                if item.quiet:
                    _read(item, got)
        return got

    def put(self, wanted: dict[str, Any], now: dict[str, Any] | None = None) -> None:
        """`wanted` (a side's values; what it lacks, the host's) where the state differs from `now` (what
        read() answered last; None: read each item first). The warnings' state last, once the filter pushed
        here is gone."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for item in self.items:
                if item.quiet:
                    self._write(item, wanted, now)
        for item in self.items:
            if not item.quiet:
                self._write(item, wanted, now)

    def _write(self, item: Handed, wanted: dict[str, Any], now: dict[str, Any] | None) -> None:
        value = wanted.get(item.name, self.pristine.get(item.name, _MISSING))
        if value is _MISSING:
            return
        with contextlib.suppress(Exception):  # a value its setter refuses now (a device gone): left as it is
            current = now.get(item.name, _MISSING) if now is not None else item.get()
            if not _same(current, value):
                item.put(value)


_MISSING = object()


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a is b or a == b)
    except Exception:  # noqa: BLE001 (tensors and arrays compare elementwise: compare what they hold)
        return False


def _read(item: Handed, into: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):  # a setting that cannot be read is not handed over (the fingerprint
        into[item.name] = item.get()  # still sees a change to it where it can)
