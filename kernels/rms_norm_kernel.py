"""RMSNorm in CUDA C++ (kernels/csrc), built once with torch's extension tooling and kept by content.

Two translation units: the kernel's launchers (rms_norm_launch.cu, CUDA headers only, nvcc) and the binding
(rms_norm.cpp, Python's C API alone: it takes device pointers and the stream, which this file reads from the
tensors), compiled in parallel by ninja, for this GPU's architecture only. The single .cu that included
torch/extension.h took 66 s on the H100's host and 91 s of CPU here; the split with a binding of tensors
(torch/csrc/utils/pybind.h) 13 s of CPU; the C API binding 1.9 s (lab/extension_build_time.py,
docs/compiled-kernels.md).

The build is kept in $PERFGATE_KERNEL_CACHE (default ~/.cache/perfgate/kernels) under a key made of the sources,
torch's and CUDA's versions, Python's, the architecture and the flags: a source edit rebuilds, nothing else
does, and a build that exists is imported directly (no ninja, no torch.utils.cpp_extension), whatever checkout
asks for it (the base and head worktrees of an A/B run share it). `python -m kernels.rms_norm_kernel` builds it
ahead, as a CI step can. `KERNELS_DETUNE=rms_norm` launches 32 threads per row instead of 512.

`start_build()` (the suite's conftest calls it when the session starts) runs a missing build in a child process,
so it overlaps the collection and the Triton cases before rms_norm (torch.utils.cpp_extension's own start-up
and checks included); `build()` then waits for that child instead of building again.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
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
CXX_FLAGS = ("-O2",)  # the binding's host code


# the binding's RmsDtype (csrc/rms_norm_launch.h): it takes device pointers, so the dtype travels as a number
DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}


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


BUILD_TIMEOUT_S = 600.0  # a build in the background that takes longer has hung (19 s is usual)
_background: list[subprocess.Popen[bytes]] = []  # the build start_build() started, until build() waits for it


class BuildError(RuntimeError):
    """The extension's build in the background failed or hung: the message names its log."""


def start_build() -> bool:
    """Start the build in a child process when none is kept for these sources; True when one was started. The
    child gets this GPU's architecture (TORCH_CUDA_ARCH_LIST) so it needs no CUDA of its own."""
    where = cache_dir()
    if _background or (where / f"{NAME}.so").is_file():
        return False
    where.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": arch_list()}
    with (where / "build.log").open("wb") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "kernels.rms_norm_kernel"],
            cwd=CSRC.parent.parent,  # where `kernels` is a package (this checkout's)
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop_build() ends ninja and the compilers with it
        )
    _background.append(child)
    return True


def stop_build() -> None:
    """End a build in the background that nothing waited for (the session is over): no process outlives it."""
    while _background:
        child = _background.pop()
        if child.poll() is None:
            _end(child)


def _end(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGTERM)
    try:
        child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def _wait_for_background(where: Path) -> None:
    if not _background:
        return
    child = _background.pop()
    try:
        code = child.wait(timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _end(child)
        raise BuildError(f"rms_norm: the build took over {BUILD_TIMEOUT_S:.0f} s; see {where / 'build.log'}") from None
    if code != 0:
        tail = (where / "build.log").read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise BuildError(f"rms_norm: the build failed (exit {code}): {tail[0][:200]}; see {where / 'build.log'}")


def build() -> Path:
    """The extension's shared object, built if it is not kept yet (one build at a time per key); a build that
    start_build() began is waited for."""
    where = cache_dir()
    built = where / f"{NAME}.so"
    if built.is_file():
        return built
    _wait_for_background(where)
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
    if n < 32 or n > 1024 or n % 32:
        raise ValueError(f"rms_norm: threads must be a multiple of 32 in [32, 1024], got {n}")
    xc, wc = x.contiguous(), weight.contiguous()
    y = torch.empty_like(xc)
    cols = xc.shape[-1]
    rows = xc.numel() // cols if cols else 0
    if rows and cols:
        stream = torch.cuda.current_stream(xc.device).cuda_stream
        dtype = DTYPE_CODES[xc.dtype]
        _extension().rms_norm(dtype, xc.data_ptr(), wc.data_ptr(), y.data_ptr(), rows, cols, float(eps), n, stream)
    return y


if __name__ == "__main__":  # build ahead (a CI step the action's cache keeps): prints where the build is, how long
    started = time.perf_counter()
    built = build()
    print(f"{built} ({time.perf_counter() - started:.1f} s)")
