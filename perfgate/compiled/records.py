"""What a case's compiled kernels are: the records the recorder fills, the store keeps, the static gate compares.

Frozen dataclasses with units in the field names; `None` is "not known" (a library kernel's registers, a CUDA
module kernel whose launch was not seen), never 0. A leaf module: perfgate.model imports it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class KernelSource(str, enum.Enum):
    """Where a kernel's facts come from."""

    TRITON = "triton"  # a Triton kernel: its compiled metadata and cubin, its launch (grid) seen by a hook
    CUDA_MODULE = "cuda module"  # a CUDA C++ kernel of a native module the case called into (cuobjdump on the .so)
    LIBRARY = "library"  # a torch operator (cuBLAS, cuDNN, ATen kernels): known by name and inputs only


class StaticPolicy(str, enum.Enum):
    """What a static change does to the gate (one option per metric: config/options.py)."""

    FAIL = "fail"
    WARN = "warn"  # reported, never failing
    OFF = "off"  # not compared


class Limiter(str, enum.Enum):
    """What bounds the blocks of one kernel that fit on an SM at once (the theoretical occupancy)."""

    REGISTERS = "registers"
    SHARED_MEMORY = "shared memory"
    WARPS = "warps"
    BLOCKS = "blocks"


@dataclass(frozen=True)
class Occupancy:
    """Theoretical occupancy of one launch on one GPU model (compiled/occupancy.py): the blocks per SM each
    resource allows, the least of them, and the warps that makes out of the SM's maximum."""

    blocks_per_sm: int
    warps_per_block: int
    max_warps_per_sm: int
    limiter: Limiter
    by_registers: int
    by_shared_memory: int
    by_warps: int
    by_blocks: int

    @property
    def active_warps(self) -> int:
        return self.blocks_per_sm * self.warps_per_block

    @property
    def pct(self) -> float:
        return 100.0 * self.active_warps / self.max_warps_per_sm


@dataclass(frozen=True)
class KernelFacts:
    """One kernel a case launches, with one launch configuration."""

    name: str  # the kernel's name (a CUDA C++ kernel's demangled name when it could be demangled)
    source: KernelSource
    registers_per_thread: int | None = None
    spill_store_bytes: int | None = None  # bytes of the local-memory stores in its SASS (ptxas's "spill stores")
    spill_load_bytes: int | None = None
    stack_bytes_per_thread: int | None = None  # its local-memory frame (spills and local arrays)
    static_shared_bytes: int | None = None  # per block, without the driver's reserved shared memory
    dynamic_shared_bytes: int | None = None  # per block, asked at launch
    block: tuple[int, int, int] | None = None  # threads per block
    grid: tuple[int, int, int] | None = None  # blocks
    num_warps: int | None = None
    num_stages: int | None = None  # Triton's software-pipelining stages
    occupancy: Occupancy | None = None
    sass_sha: str = ""  # sha256 (16 hex) of its SASS, normalised (compiled/sass.py); "" when not read
    launches: int = 1  # launches per call of the case with this configuration
    key: str = ""  # what matches it between two runs: the name, and #N for its Nth specialisation in a case
    detail: str = ""  # where it came from (the Triton cache key, the .so, the operator's inputs)

    @property
    def spill_bytes(self) -> int | None:
        """Spill traffic of one thread's code, stores and loads together (None: not known)."""
        if self.spill_store_bytes is None or self.spill_load_bytes is None:
            return None
        return self.spill_store_bytes + self.spill_load_bytes

    @property
    def threads_per_block(self) -> int | None:
        return None if self.block is None else self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class CompiledCase:
    """Every kernel one call of a case launched, what it was called with, and what compiled and ran it."""

    kernels: tuple[KernelFacts, ...]
    inputs_sha: str  # sha256 (16 hex) of the arguments' shapes, dtypes, strides and scalar values
    inputs: str = ""  # the same, readable and shortened
    arch: str = ""  # the GPU architecture the facts are for ("sm_90")
    versions: tuple[tuple[str, str], ...] = ()  # (library, version): torch, triton, CUDA, cuDNN, the driver
    notes: tuple[str, ...] = ()  # what could not be read, in words ("cuobjdump not found: no SASS hashes")

    @property
    def complete(self) -> bool:
        """Whether every kernel's code is known (a library kernel's is known by its library version only)."""
        return not self.notes
