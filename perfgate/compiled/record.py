"""Record the compiled kernels of a case: one call watched before its samples (Triton launches, torch operators,
native modules entered: hooks in Python, nothing on the GPU), the facts read after them (cuobjdump on the
cubins and modules, each distinct one once: compiled/cache.py; for a case that entered a CUDA C++ module, one
more call for the launches only CUPTI sees: compiled/launch_hook.py). A failure to read anything is a note on
the case, never a failed case.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfgate.compiled.cache import CodeReader, cubin_cache_dir
from perfgate.compiled.cubin import CubinKernel, demangled, find_cuobjdump
from perfgate.compiled.inputs import describe
from perfgate.compiled.modules import NativeCalls, ObservedLaunch, cuda_modules, launched_kernels
from perfgate.compiled.occupancy import SmLimits, limits_for, theoretical
from perfgate.compiled.records import CompiledCase, KernelFacts, KernelSource
from perfgate.compiled.torch_ops import TorchOps
from perfgate.compiled.triton_kernels import Launch, TritonLaunches, facts
from perfgate.errors import PerfgateError, one_line
from perfgate.measure.phases import LAUNCHES

Timed = Callable[[str], contextlib.AbstractContextManager[None]]  # measure/phases.py's Phases


def _untimed(name: str) -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


@dataclass(frozen=True)
class Watched:
    """What one call did, before anything was read."""

    triton: tuple[Launch, ...]
    ops: tuple[tuple[str, str], ...]
    modules: tuple[Path, ...]  # native modules with CUDA code it entered
    inputs: str
    inputs_sha: str
    notes: tuple[str, ...] = ()


@dataclass
class KernelRecorder:
    """One per session: what reading compiled kernels needs, and what it read already."""

    arch: str
    versions: tuple[tuple[str, str], ...] = ()
    observe_launches: Callable[[Callable[[], Any]], list[ObservedLaunch]] = launched_kernels
    reader: CodeReader | None = None  # None: no cuobjdump (the notes say so)
    notes: tuple[str, ...] = ()
    _read: Callable[[bytes], list[CubinKernel]] | None = None  # a cubin's kernels (the reader's, or a stand-in)
    _modules: dict[Path, list[CubinKernel]] = field(default_factory=dict)  # this process's modules, by path
    _unread: dict[Path, str] = field(default_factory=dict)  # modules that could not be read, and why
    _names: dict[str, str] = field(default_factory=dict)  # C++ symbols, demangled

    @classmethod
    def for_device(cls, arch: str, versions: tuple[tuple[str, str], ...] = ()) -> KernelRecorder:
        recorder = cls(arch=arch, versions=versions)
        try:
            recorder.reader = CodeReader(find_cuobjdump(), cubin_cache_dir())
            recorder._read = recorder.reader.cubin
        except PerfgateError as err:
            recorder.notes = (f"{err}: no registers, spills or SASS hashes from cubins",)
        if limits_for(arch) is None:
            recorder.notes += (f"no occupancy: perfgate does not know the limits of {arch or 'this GPU'}",)
        return recorder

    @property
    def limits(self) -> SmLimits | None:
        return limits_for(self.arch)

    def watch(self, call: Callable[[], Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Watched:
        """Make one call with the hooks on (outside any timing). A call that fails only under the hooks is made
        again without them: the record says so, the case goes on."""
        triton, ops, native = TritonLaunches(), TorchOps(), NativeCalls()
        inputs, sha = describe(args, kwargs)
        notes: tuple[str, ...] = ()
        try:
            with contextlib.ExitStack() as hooks:
                for hook in (triton, ops, native):
                    hooks.enter_context(hook.watching())
                call()
        except Exception as err:  # noqa: BLE001 (the hooks' fault or the call's: the plain call decides)
            call()
            notes += (one_line(f"the call failed with the kernel hooks on ({type(err).__name__}: {err})", 200),)
        _synchronize()
        modules = tuple(cuda_modules(native.modules))
        return Watched(tuple(triton.launches), tuple(ops.ops), modules, inputs, sha, notes)

    def compiled(self, seen: Watched, call: Callable[[], Any], phases: Timed | None = None) -> CompiledCase:
        """The facts of what `watch` saw; `call` is made once more only for a case that entered a CUDA module
        (under `phases(LAUNCHES)` when given: measure/phases.py). Whatever goes wrong reading them is a note on
        an empty record, never a failed case."""
        try:
            return self._compiled(seen, call, phases or _untimed)
        except Exception as err:  # noqa: BLE001 (reading compiled code must not fail a measured case)
            note = one_line(f"compiled kernels not recorded: {type(err).__name__}: {err}", 200)
            return CompiledCase((), seen.inputs_sha, seen.inputs, self.arch, self.versions, (note,))

    def _compiled(self, seen: Watched, call: Callable[[], Any], phases: Timed) -> CompiledCase:
        notes = list(self.notes + seen.notes)
        kernels = self._triton(seen.triton, notes)
        if seen.modules:
            kernels += self._module_kernels(seen.modules, call, notes, phases)
        kernels += _library(seen.ops)
        return CompiledCase(
            kernels=_keyed(kernels),
            inputs_sha=seen.inputs_sha,
            inputs=seen.inputs,
            arch=self.arch,
            versions=self.versions,
            notes=tuple(dict.fromkeys(notes)),
        )

    def _triton(self, launches: tuple[Launch, ...], notes: list[str]) -> list[KernelFacts]:
        read = self._read or (lambda cubin: [])
        counted = Counter((id(launch.kernel), launch.grid) for launch in launches)
        first = {(id(launch.kernel), launch.grid): launch for launch in reversed(launches)}
        out = []
        for key, count in counted.items():  # in order of first launch
            launch = first[key]
            try:
                out.append(facts(launch.kernel, launch.grid, read, self.limits, count))
            except (PerfgateError, AttributeError, ValueError, TypeError) as err:
                notes.append(one_line(f"a Triton kernel could not be read: {err}", 200))
        return out

    def _module_kernels(
        self, modules: tuple[Path, ...], call: Callable[[], Any], notes: list[str], phases: Timed
    ) -> list[KernelFacts]:
        code = [(path, k) for path in modules for k in self._module_code(path, notes)]
        if not code:  # nothing to match launches with: the notes say why, and no profiler is started for it
            return []
        names = self._demangled([k.name for _, k in code])
        try:
            with phases(LAUNCHES):
                observed = self.observe_launches(call)
        except Exception as err:  # noqa: BLE001 (no profiler, no CUPTI: the module's kernels without launches)
            notes.append(one_line(f"launches of {', '.join(p.name for p in modules)} not seen: {err}", 200))
            return [_module_facts(p, k, names[k.name], None, self.limits) for p, k in code]
        by_name = {names[k.name]: (p, k) for p, k in code}
        counted = Counter(_launch_key(o) for o in observed if o.name in by_name)
        if not counted:  # launched none of them, or names that do not match: say so, keep the code
            seen_names = ", ".join(sorted({o.name[:60] for o in observed})) or "none"
            notes.append(
                one_line(f"no launch seen of {', '.join(p.name for p in modules)}'s kernels ({seen_names})", 200)
            )
            return [_module_facts(p, k, names[k.name], None, self.limits) for p, k in code]
        launches = {_launch_key(o): o for o in observed}
        return [
            replace(_module_facts(*by_name[key[0]], key[0], launches[key], self.limits), launches=count)
            for key, count in counted.items()
        ]

    def _module_code(self, path: Path, notes: list[str]) -> list[CubinKernel]:
        """The kernels a module carries for this GPU, read once per process (and per content: compiled/cache.py)."""
        if path not in self._modules and self.reader is not None:  # without cuobjdump the notes say so already
            try:
                self._modules[path] = self.reader.module(path, self.arch)
            except PerfgateError as err:  # kept too: the next case that enters it is not read again
                self._modules[path] = []
                self._unread[path] = one_line(str(err), 200)
        if path in self._unread:
            notes.append(self._unread[path])
        return self._modules.get(path, [])

    def _demangled(self, symbols: list[str]) -> dict[str, str]:
        new = [s for s in dict.fromkeys(symbols) if s not in self._names]
        if new:
            self._names.update(demangled(new))
        return {s: self._names[s] for s in symbols}


def _launch_key(
    o: ObservedLaunch,
) -> tuple[str, tuple[int, int, int], tuple[int, int, int], int | None, int | None]:
    return (o.name, o.grid, o.block, o.shared_bytes, o.dynamic_shared_bytes)


def _module_facts(
    path: Path, code: CubinKernel, name: str, launch: ObservedLaunch | None, limits: SmLimits | None
) -> KernelFacts:
    static = code.static_shared_bytes
    dynamic = None
    occupancy = None
    if launch is not None:
        total = launch.shared_bytes if launch.shared_bytes is not None else static
        dynamic = launch.dynamic_shared_bytes if launch.dynamic_shared_bytes is not None else max(0, total - static)
        threads = launch.block[0] * launch.block[1] * launch.block[2]
        if limits is not None:
            occupancy = theoretical(limits, code.registers_per_thread, threads, static, dynamic)
    return KernelFacts(
        name=name,
        source=KernelSource.CUDA_MODULE,
        registers_per_thread=code.registers_per_thread,
        spill_store_bytes=code.spill_store_bytes,
        spill_load_bytes=code.spill_load_bytes,
        stack_bytes_per_thread=code.stack_bytes_per_thread,
        static_shared_bytes=static,
        dynamic_shared_bytes=dynamic,
        block=launch.block if launch else None,
        grid=launch.grid if launch else None,
        num_warps=-(-launch.block[0] * launch.block[1] * launch.block[2] // 32) if launch else None,
        occupancy=occupancy,
        sass_sha=code.sass_sha,
        detail=path.name,
    )


def _library(ops: tuple[tuple[str, str], ...]) -> list[KernelFacts]:
    counted = Counter(ops)
    return [
        KernelFacts(name=op, source=KernelSource.LIBRARY, launches=n, detail=inputs)
        for (op, inputs), n in counted.items()
    ]


def _keyed(kernels: list[KernelFacts]) -> tuple[KernelFacts, ...]:
    """Each kernel's key: its name, and #2, #3 for the further specialisations of one name in the case."""
    seen: Counter[str] = Counter()
    out = []
    for k in kernels:
        seen[k.name] += 1
        out.append(replace(k, key=k.name if seen[k.name] == 1 else f"{k.name}#{seen[k.name]}"))
    return tuple(out)


def library_versions(environment_versions: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """What compiled and runs a case's kernels besides its own code: the environment's versions (torch, Triton,
    CUDA, the driver) and, where installed, cuDNN's and cuBLAS's."""
    found = {k: v for k, v in environment_versions.items() if v}
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.backends.cudnn.is_available():
        found["cudnn"] = str(torch.backends.cudnn.version())
    from importlib import metadata

    for dist in ("nvidia-cublas-cu12", "nvidia-cublas-cu13", "nvidia-cublas"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found["cublas"] = metadata.version(dist)
    return tuple(sorted(found.items()))


def _synchronize() -> None:
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()
