"""What was read from compiled code, kept: in the process (a case launches a kernel many times, a session
enters a module in many cases) and across runs in a directory (a warm gate runs no cuobjdump at all).

Keys are contents, never paths: a Triton kernel's cubin by its sha256, a native module by the sha256 of its
device code (`.nv_fatbin`) and the GPU architecture it is read for. The base and head worktrees of an A/B run,
or two checkouts on one runner, share every entry whose code is identical. A damaged entry is read again, an
unwritable directory costs the next run a cuobjdump, nothing else.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from perfgate.atomic import atomic_write_text
from perfgate.compiled.cubin import (
    CubinKernel,
    cubin_arch,
    extract_cubins,
    fatbin_sha,
    read_cubin,
    runnable_arch,
)
from perfgate.errors import PerfgateError

CUBIN_CACHE_ENV = "PERFGATE_CUBIN_CACHE"
# bump when what is read from a cubin changes (the hash, a new field); 2: the code hash from the cubin's bytes
READER_VERSION = 2


def cubin_cache_dir() -> Path:
    """Where read cubins are kept between runs: $PERFGATE_CUBIN_CACHE, else $XDG_CACHE_HOME/perfgate/cubins."""
    named = os.environ.get(CUBIN_CACHE_ENV)
    if named:
        return Path(named)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "perfgate" / "cubins"


@dataclass
class CodeReader:
    """cuobjdump's reading of cubins and modules, each distinct one read once."""

    cuobjdump: str
    cache_dir: Path | None = None
    _memory: dict[str, list[CubinKernel]] = field(default_factory=dict)

    def cubin(self, cubin: bytes) -> list[CubinKernel]:
        """The kernels of one cubin (a Triton kernel's `asm["cubin"]`)."""
        key = f"{hashlib.sha256(cubin).hexdigest()}-v{READER_VERSION}"
        return self._kept(key, lambda: read_cubin(cubin, self.cuobjdump))

    def module(self, path: Path, arch: str) -> list[CubinKernel]:
        """The kernels a native module carries for a GPU of architecture `arch` (compiled/cubin.py
        `runnable_arch`); PerfgateError naming what it carries when none runs there."""
        sha = fatbin_sha(path)
        if not sha:
            raise PerfgateError(f"{path.name}: no device code readable (no .nv_fatbin section)")
        return self._kept(f"module-{sha}-{arch}-v{READER_VERSION}", lambda: self._read_module(path, arch))

    def _read_module(self, path: Path, arch: str) -> list[CubinKernel]:
        cubins = extract_cubins(path, self.cuobjdump)
        archs = sorted({cubin_arch(name) for name in cubins} - {""})
        chosen = runnable_arch(archs, arch)
        if not chosen:
            carried = ", ".join(archs) or "no cubin"
            raise PerfgateError(
                f"{path.name} carries no code that runs on {arch} ({carried}; PTX is compiled by the driver at "
                "load: no SASS to read)"
            )
        return [k for name, data in cubins.items() if cubin_arch(name) == chosen for k in self.cubin(data)]

    def _kept(self, key: str, read: Callable[[], list[CubinKernel]]) -> list[CubinKernel]:
        if key not in self._memory:
            stored = _stored(self.cache_dir, key)
            self._memory[key] = stored if stored is not None else _store(self.cache_dir, key, read())
        return self._memory[key]


def _stored(cache_dir: Path | None, key: str) -> list[CubinKernel] | None:
    if cache_dir is None:
        return None
    try:
        return [CubinKernel(**k) for k in json.loads((cache_dir / f"{key}.json").read_text())]
    except (OSError, ValueError, TypeError):  # absent, or damaged: read the code again
        return None


def _store(cache_dir: Path | None, key: str, kernels: list[CubinKernel]) -> list[CubinKernel]:
    if cache_dir is not None:
        with contextlib.suppress(OSError):  # a read-only cache costs the next run a cuobjdump, nothing else
            cache_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_text(cache_dir / f"{key}.json", json.dumps([asdict(k) for k in kernels]))
    return kernels
