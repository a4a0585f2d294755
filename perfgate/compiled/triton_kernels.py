"""Triton kernels: which ones a call launches, with which grid, and what their compiled form says.

Launches are seen by wrapping `JITFunction.run` for one call (Triton 3.0 to 3.9: `fn[grid](...)` and the
autotuner's final launch both go through it, and it returns the CompiledKernel it launched). The facts come
from that CompiledKernel: `metadata` (name, num_warps, num_stages, shared: Triton's shared memory is all
dynamic), the driver's `n_regs` once the kernel is loaded, and its cubin (`asm["cubin"]`), read with cuobjdump
for the SASS hash, the stack frame and the spill traffic (compiled/cubin.py).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from perfgate.compiled.cubin import CubinKernel
from perfgate.compiled.occupancy import SmLimits, theoretical
from perfgate.compiled.records import KernelFacts, KernelSource


@dataclass(frozen=True)
class Launch:
    kernel: Any  # triton.compiler.CompiledKernel
    grid: tuple[int, int, int] | None


class TritonLaunches:
    """The Triton launches of the calls made inside `watching()`, in order."""

    def __init__(self) -> None:
        self.launches: list[Launch] = []

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        module = sys.modules.get("triton.runtime.jit")  # nothing to watch when the code never imported Triton
        jit = getattr(module, "JITFunction", None)
        if jit is None:
            yield
            return
        original = jit.run
        launches = self.launches

        def run(fn: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            kernel = original(fn, *args, grid=grid, warmup=warmup, **kwargs)
            if not warmup and kernel is not None:
                launches.append(Launch(kernel, grid_of(grid, getattr(fn, "arg_names", ()), args, kwargs)))
            return kernel

        jit.run = run
        try:
            yield
        finally:
            jit.run = original


def grid_of(grid: Any, arg_names: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, int, int] | None:
    """The launch grid as three ints; a callable grid is called as Triton calls it (with the arguments by
    name); None when that fails."""
    try:
        if callable(grid):
            grid = grid({**dict(zip(arg_names, args)), **kwargs})
        dims = [int(d) for d in grid]
    except Exception:  # noqa: BLE001 (a grid we cannot evaluate leaves the grid unknown, never fails the case)
        return None
    if not 1 <= len(dims) <= 3 or min(dims) < 0:
        return None
    dims += [1] * (3 - len(dims))
    return (dims[0], dims[1], dims[2])


def facts(
    kernel: Any,
    grid: tuple[int, int, int] | None,
    read: Callable[[bytes], list[CubinKernel]],
    limits: SmLimits | None,
    launches: int = 1,
) -> KernelFacts:
    """One launched Triton kernel's facts. `read` reads a cubin (compiled/cache.py keeps what it read)."""
    md = kernel.metadata
    name = str(md.name)
    num_warps = int(md.num_warps)
    warp_size = int(getattr(md, "warp_size", 32) or 32)
    threads = num_warps * warp_size
    dynamic = int(getattr(md, "shared", 0) or 0)
    cubin = kernel.asm.get("cubin") if hasattr(kernel, "asm") else None
    code = next((k for k in read(cubin) if k.name == name), None) if isinstance(cubin, bytes) else None
    # the driver's count once the kernel is loaded (on a GPU), the cubin's otherwise: the same number
    registers = getattr(kernel, "n_regs", None) or (code.registers_per_thread if code else None)
    static = code.static_shared_bytes if code else 0
    occupancy = (
        theoretical(limits, int(registers), threads, static, dynamic)
        if limits is not None and registers is not None
        else None
    )
    return KernelFacts(
        name=name,
        source=KernelSource.TRITON,
        registers_per_thread=int(registers) if registers is not None else None,
        spill_store_bytes=code.spill_store_bytes if code else None,
        spill_load_bytes=code.spill_load_bytes if code else None,
        stack_bytes_per_thread=code.stack_bytes_per_thread if code else None,
        static_shared_bytes=static if code else None,
        dynamic_shared_bytes=dynamic,
        block=(threads, 1, 1),
        grid=grid,
        num_warps=num_warps,
        num_stages=int(md.num_stages) if getattr(md, "num_stages", None) is not None else None,
        occupancy=occupancy,
        sass_sha=code.sass_sha if code else "",
        launches=launches,
        detail=f"triton {str(getattr(kernel, 'hash', ''))[:16]}",
    )
