"""Which profilers exist: the built-in nsys and ncu (measure/profilers.py) and any a package installs under
the `perfgate.profilers` entry-point group, each an object satisfying the `Profiler` protocol:

    [project.entry-points."perfgate.profilers"]
    rocprof = "my_package.rocprof:PROFILER"

Settings validation, the pre-flight tool check, the profiling children and the profiling phase ask this
module; a new backend is one module and one entry point, no edit in perfgate. Read on each call, not kept
in a module-level list (installed packages can change between runs of one interpreter, as tests do).
"""

from __future__ import annotations

from importlib import metadata

from perfgate.errors import ConfigError
from perfgate.measure.profilers import NcuProfiler, NsysProfiler, Profiler

ENTRY_POINT_GROUP = "perfgate.profilers"
BUILTIN: tuple[Profiler, ...] = (NsysProfiler(), NcuProfiler())


def registered() -> tuple[Profiler, ...]:
    """The built-in profilers, then the installed ones by entry-point name; a broken or clashing entry point
    is one clear error naming it."""
    found = list(BUILTIN)
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            profiler = ep.load()
        except Exception as err:
            raise ConfigError(
                f"perfgate: cannot load profiler {ep.name!r} ({ep.value}): {type(err).__name__}: {err}"
            ) from err
        for attr in ("name", "executable", "install_hint", "child", "argv", "record", "read"):
            if not hasattr(profiler, attr):
                raise ConfigError(
                    f"perfgate: profiler {ep.name!r} ({ep.value}) has no {attr!r}: not a Profiler "
                    f"(perfgate.measure.profilers)"
                )
        if profiler.name != ep.name or any(p.name == ep.name for p in found):
            raise ConfigError(
                f"perfgate: profiler entry point {ep.name!r} ({ep.value}) clashes: its name is "
                f"{profiler.name!r} and the names taken are {[p.name for p in found]}"
            )
        found.append(profiler)
    return tuple(found)


def profiler_names() -> tuple[str, ...]:
    return tuple(p.name for p in registered())


def profilers_named(names: frozenset[str]) -> tuple[Profiler, ...]:
    """The named profilers in the registry's order (nsys before ncu); an unknown name is a ConfigError."""
    found = registered()
    unknown = names - {p.name for p in found}
    if unknown:
        raise ConfigError(f"perfgate: unknown profiler(s) {sorted(unknown)}; known: {', '.join(p.name for p in found)}")
    return tuple(p for p in found if p.name in names)


def profiler_named(name: str) -> Profiler:
    [profiler] = profilers_named(frozenset({name}))
    return profiler
