"""RMSNorm in CUDA C++ (kernels/csrc), built once with torch's extension tooling and kept by content.

Two translation units: the kernel's launchers (rms_norm_launch.cu, CUDA headers only, nvcc) and the binding
(rms_norm.cpp, the fewest torch headers, the C++ compiler alone), compiled in parallel by ninja, for this GPU's
architecture only. The single .cu that included torch/extension.h took 66 s on the H100's host and 91 s of CPU
here; the split takes 13 s of CPU (lab/extension_build_time.py, docs/compiled-kernels.md).

The build is kept in $PERFGATE_KERNEL_CACHE (default ~/.cache/perfgate/kernels) under a key made of the sources,
torch's and CUDA's versions, Python's, the architecture and the flags: a source edit rebuilds, nothing else
does, and a build that exists is imported directly (no ninja, no torch.utils.cpp_extension), whatever checkout
asks for it (the base and head worktrees of an A/B run share it). `python -m kernels.rms_norm_kernel` builds it
ahead, as a CI step can. `KERNELS_DETUNE=rms_norm` launches 32 threads per row instead of 512.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import torch

from kernels._common import FLOAT_DTYPES, check_dtype, check_same, detuned

NAME = "perfgate_rms_norm"
CSRC = Path(__file__).parent / "csrc"
SOURCES = ("rms_norm_launch.cu", "rms_norm.cpp")
HEADERS = ("rms_norm_kernel.cuh", "rms_norm_launch.h")  # a change to any of them rebuilds
CUDA_FLAGS = ("-O3", "--use_fast_math")
CXX_FLAGS = ("-O2",)  # the binding's host code: -O0 would save ~1 s of its ~12 s, at some cost per call


def arch_list() -> str:
    """TORCH_CUDA_ARCH_LIST when set, else this GPU's architecture alone (torch would add PTX for it)."""
    named = os.environ.get("TORCH_CUDA_ARCH_LIST", "").strip()
    if named:
        return named
    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}"


def cache_dir() -> Path:
    base = Path(os.environ.get("PERFGATE_KERNEL_CACHE", Path.home() / ".cache" / "perfgate" / "kernels"))
    digest = hashlib.sha256()
    for name in SOURCES + HEADERS:
        digest.update(name.encode() + b"\0" + (CSRC / name).read_bytes())
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    flags = " ".join(CUDA_FLAGS + CXX_FLAGS)
    digest.update(f"{torch.__version__}|{torch.version.cuda}|{python}|{arch_list()}|{flags}".encode())
    return base / f"rms_norm-{digest.hexdigest()[:16]}"


def build() -> Path:
    """The extension's shared object, built if it is not kept yet (one build at a time per key)."""
    where = cache_dir()
    built = where / f"{NAME}.so"
    if built.is_file():
        return built
    where.mkdir(parents=True, exist_ok=True)
    with _locked(where / "build.lock"):
        if not built.is_file():  # another process may have built it while this one waited
            _build(where)
    return built


def _build(where: Path) -> None:
    from torch.utils.cpp_extension import load

    with _environ(TORCH_CUDA_ARCH_LIST=arch_list()):
        load(
            name=NAME,
            sources=[str(CSRC / s) for s in SOURCES],
            build_directory=str(where),
            extra_cflags=list(CXX_FLAGS),
            extra_cuda_cflags=list(CUDA_FLAGS),
            extra_include_paths=[str(CSRC)],
            is_python_module=False,  # built and loaded as a library; _extension imports it once, from here
            verbose=False,
        )


@functools.cache
def _extension() -> ModuleType:
    path = build()
    spec = importlib.util.spec_from_file_location(NAME, path)  # as torch.utils.cpp_extension.load imports it
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6, threads: int | None = None) -> torch.Tensor:
    """x * rsqrt(mean(x^2, -1) + eps) * weight, for fp32/fp16/bf16 CUDA tensors."""
    check_same("rms_norm", x, weight)
    check_dtype("rms_norm", x, FLOAT_DTYPES)
    if x.dim() == 0 or weight.shape != (x.shape[-1],):
        raise ValueError(f"rms_norm: weight must have shape (x.shape[-1],), got {tuple(weight.shape)}")
    if x.device.type != "cuda":
        raise ValueError("rms_norm: the CUDA C++ kernel needs CUDA tensors")
    n = threads or (32 if detuned("rms_norm") else 512)
    return _extension().rms_norm(x, weight, float(eps), int(n))


if __name__ == "__main__":  # build ahead (a CI step the action's cache keeps): prints where the build is
    print(build())
