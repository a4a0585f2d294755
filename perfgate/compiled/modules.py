"""CUDA C++ kernels of native modules (a torch C++/CUDA extension, a pybind11 module) that a call enters.

A profile hook for one call sees every C function the call makes from Python; those of a module whose shared
object carries CUDA code (a `.nv_fatbin` section) name the module, and cuobjdump reads its kernels
(compiled/cubin.py). Which of them the call launched, and how (grid, block, dynamic shared memory), only the
GPU knows: `launched_kernels` asks CUPTI for one more call (its launch callbacks, compiled/launch_hook.py; else
torch.profiler), made after the case was timed (so no hook is around this case's samples), and only for a case
that entered such a module. Without either (no GPU) every kernel of the module is recorded, without a launch.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.compiled.cubin import demangled, elf_file_section_names
from perfgate.parse.invariants import as_int64

# modules whose kernels are a library's (known by the library's version), not the project's
LIBRARY_PACKAGES = frozenset({"torch", "triton", "numpy", "cupy", "jax", "jaxlib", "nvidia", "pynvml", "perfgate"})
PROC_MAPS = Path("/proc/self/maps")


class NativeCalls:
    """The modules of the C functions called from Python inside `watching()`."""

    def __init__(self) -> None:
        self.modules: set[str] = set()

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        seen = self.modules

        def profile(frame: Any, event: str, arg: Any) -> None:
            if event == "c_call":
                name = getattr(arg, "__module__", None)
                if isinstance(name, str):
                    seen.add(name)

        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            yield
        finally:
            sys.setprofile(previous)


def cuda_modules(names: Iterable[str], maps: Path = PROC_MAPS) -> list[Path]:
    """The shared objects behind these module names that carry CUDA code, library packages left out."""
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    wanted = {n for n in names if n.split(".")[0] not in LIBRARY_PACKAGES | stdlib | {"builtins"}}
    loaded = _loaded_objects(maps) if wanted else []
    found: set[Path] = set()
    for name in wanted:
        file = getattr(sys.modules.get(name), "__file__", None)
        leaf = name.rsplit(".", 1)[-1]
        # torch.utils.cpp_extension.load does not put its module in sys.modules: find its .so among the
        # process's loaded objects by name (perfgate_rms_norm.so, perfgate_rms_norm.cpython-311-...so)
        candidates = [Path(file)] if file else [p for p in loaded if p.name.split(".")[0] == leaf]
        found.update(p for p in candidates if p.suffix in (".so", ".pyd") and _has_cuda(p))
    return sorted(found)


def _loaded_objects(maps: Path) -> list[Path]:
    try:
        text = maps.read_text(errors="replace")
    except OSError:  # not Linux: only modules in sys.modules are found
        return []
    return sorted({Path(line.split(None, 5)[5]) for line in text.splitlines() if len(line.split(None, 5)) == 6})


def _has_cuda(path: Path) -> bool:
    return ".nv_fatbin" in elf_file_section_names(path)


@dataclass(frozen=True)
class ObservedLaunch:
    """One kernel launch as CUPTI saw it (torch.profiler's trace)."""

    name: str  # demangled, as CUPTI names it
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    registers_per_thread: int | None
    shared_bytes: int | None  # static + dynamic, per block
    dynamic_shared_bytes: int | None = None  # where known apart (CUPTI's callbacks: the launch's own argument)


def launched_kernels(call: Callable[[], Any]) -> list[ObservedLaunch]:
    """The kernels one more call launches: from CUPTI's launch callbacks (milliseconds), else from torch.profiler
    (CUPTI's activity API: seconds to start). RuntimeError when neither can tell."""
    from perfgate.compiled.launch_hook import LaunchHookUnavailable, hooked_launches

    try:
        hooked = hooked_launches(call)
    except LaunchHookUnavailable:
        return profiled_launches(call)
    names = demangled(sorted({h.symbol for h in hooked}))
    return [
        ObservedLaunch(names[h.symbol], h.grid, h.block, None, None, dynamic_shared_bytes=h.dynamic_shared_bytes)
        for h in hooked
    ]


def profiled_launches(call: Callable[[], Any]) -> list[ObservedLaunch]:
    """The kernels one more call launches, from torch.profiler (CUPTI). RuntimeError when it cannot tell."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with tempfile.TemporaryDirectory(prefix="perfgate-launches-") as tmp:
        trace = Path(tmp) / "trace.json"
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            call()
            torch.cuda.synchronize()
        prof.export_chrome_trace(str(trace))
        return launches_in_trace(trace)


def launches_in_trace(path: Path) -> list[ObservedLaunch]:
    """The kernel events of a torch.profiler Chrome trace, in order."""
    from perfgate.parse.torch_trace import TraceStream

    out = []
    for event in TraceStream(path).events():
        if event.get("cat") != "kernel" or not isinstance(event.get("args"), dict):
            continue
        args = event["args"]
        grid, block = _dims(args.get("grid")), _dims(args.get("block"))
        if grid is None or block is None:
            continue
        out.append(
            ObservedLaunch(
                name=str(event.get("name", "")),
                grid=grid,
                block=block,
                registers_per_thread=_count(args.get("registers per thread")),
                shared_bytes=_count(args.get("shared memory")),
            )
        )
    return out


def _dims(value: Any) -> tuple[int, int, int] | None:
    if not isinstance(value, list) or len(value) != 3:
        return None
    dims = [_count(v) for v in value]
    if any(d is None or d < 1 for d in dims):
        return None
    return (int(dims[0] or 1), int(dims[1] or 1), int(dims[2] or 1))


def _count(value: Any) -> int | None:
    number = as_int64(value)
    return number if number is not None and number >= 0 else None
