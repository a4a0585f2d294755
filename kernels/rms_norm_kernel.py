"""RMSNorm in CUDA C++ (kernels/csrc), built once with torch's extension tooling and cached.

The build is cached in $PERFGATE_KERNEL_CACHE (default ~/.cache/perfgate/kernels) under a key made of
the source hash, the torch version and the GPU architecture, so a source edit rebuilds and nothing else
does. `KERNELS_DETUNE=rms_norm` launches 32 threads per row instead of 512.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import torch

from kernels._common import FLOAT_DTYPES, check_dtype, check_same, detuned

CSRC = Path(__file__).parent / "csrc"
SOURCES = ("rms_norm.cu", "rms_norm_kernel.cuh")  # a change to either rebuilds


def cache_dir() -> Path:
    base = Path(os.environ.get("PERFGATE_KERNEL_CACHE", Path.home() / ".cache" / "perfgate" / "kernels"))
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update((CSRC / name).read_bytes())
    major, minor = torch.cuda.get_device_capability()
    digest.update(f"{torch.__version__}|sm_{major}{minor}".encode())
    return base / f"rms_norm-{digest.hexdigest()[:16]}"


@functools.cache
def _extension():
    from torch.utils.cpp_extension import load

    build = cache_dir()
    build.mkdir(parents=True, exist_ok=True)
    major, minor = torch.cuda.get_device_capability()
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", f"{major}.{minor}")
    return load(
        name="perfgate_rms_norm",
        sources=[str(CSRC / "rms_norm.cu")],
        build_directory=str(build),
        extra_cuda_cflags=["-O3", "--use_fast_math"],
        extra_include_paths=[str(CSRC)],
        verbose=False,
    )


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
