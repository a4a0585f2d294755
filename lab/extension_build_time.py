"""What the RMSNorm extension's cold build costs, layout by layout (issue 34, cold start): torch's own ninja file
for each variant, its objects compiled (a CPU-only torch has the headers, not the CUDA libraries to link
against: `--link` links too, on a machine with a CUDA torch), wall time and the compilers' CPU time.

    python lab/extension_build_time.py [--jobs 2] [--link] [--variants before,split,...]

Variants: `before` (one .cu including torch/extension.h), `split` (the kernel's launchers in a .cu with CUDA
headers only, the binding in a .cpp on Python's C API: what the suite builds now), `split-tensors` (the same
split with the earlier binding of tensors, the fewest torch headers), `split-extension-h` (that binding
including torch/extension.h), `split-O0` (the binding of tensors at -O0), `split-five-archs` (the kernel for
five architectures, as a TORCH_CUDA_ARCH_LIST naming several GPUs asks; unset, torch builds for the visible
GPUs' only). CPU time is
the sum over the compilers the build ran (user + system), steady under load where wall time is not.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CSRC = ROOT / "kernels" / "csrc"
OLD_BINDING = "rms_norm_extension_h.cu"  # the single translation unit the suite had before the split
TENSOR_BINDING = "rms_norm_tensors.cpp"  # the binding of tensors (torch/csrc/utils/pybind.h) before the C API one

VARIANTS = {
    "before": ([OLD_BINDING], "9.0", ["-O3"]),
    "split": (["rms_norm_launch.cu", "rms_norm.cpp"], "9.0", ["-O2"]),
    "split-tensors": (["rms_norm_launch.cu", TENSOR_BINDING], "9.0", ["-O2"]),
    "split-extension-h": (["rms_norm_launch.cu", "rms_norm_extension_h.cpp"], "9.0", ["-O2"]),
    "split-O0": (["rms_norm_launch.cu", TENSOR_BINDING], "9.0", ["-O0"]),
    "split-five-archs": (["rms_norm_launch.cu", "rms_norm.cpp"], "8.0;8.6;8.9;9.0;10.0", ["-O2"]),
}


def old_sources(where: Path) -> None:
    """The pre-split translation unit (from git) and a split binding that includes torch/extension.h."""
    old = subprocess.run(
        ["git", "-C", str(ROOT), "show", "4741dd5:kernels/csrc/rms_norm.cu"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    (where / OLD_BINDING).write_text(old)
    binding = subprocess.run(
        ["git", "-C", str(ROOT), "show", "49236ba:kernels/csrc/rms_norm.cpp"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    (where / TENSOR_BINDING).write_text(binding)
    head, _, rest = binding.partition('#include "rms_norm_launch.h"')
    lines = [line for line in head.splitlines() if not line.startswith("#include") or "CUDAStream" in line]
    (where / "rms_norm_extension_h.cpp").write_text(
        "\n".join(lines) + '\n#include <torch/extension.h>\n#include "rms_norm_launch.h"' + rest
    )


def build(name: str, sources: list[str], arch_list: str, cflags: list[str], jobs: int, link: bool) -> str:
    from torch.utils import cpp_extension as ce

    if ce.CUDA_HOME is None:  # a CPU-only torch: its headers and this machine's nvcc compile, nothing links
        ce.CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    stub = _stubs()
    with tempfile.TemporaryDirectory(prefix=f"ext-{name}-") as tmp:
        work = Path(tmp)
        old_sources(work)
        paths = [str(work / s) if (work / s).exists() else str(CSRC / s) for s in sources]
        os.environ["TORCH_CUDA_ARCH_LIST"] = arch_list
        ce._write_ninja_file_to_build_library(
            path=str(work / "build.ninja"),
            name="perfgate_rms_norm",
            sources=paths,
            extra_cflags=cflags,
            extra_cuda_cflags=["-O3", "--use_fast_math"],
            extra_sycl_cflags=[],
            extra_ldflags=[],
            extra_include_paths=[str(CSRC), *stub],
            with_cuda=True,
            with_sycl=False,
            is_standalone=False,
        )
        results = [_ninja(work, jobs, [target]) for target in _objects(work)]
        if link:
            results.append(_ninja(work, jobs, []))
        wall = sum(r[0] for r in results)
        cpu = sum(r[1] for r in results)
        each = ", ".join(f"{t} {c:.1f}" for t, (_, c, _) in zip([*_objects(work), "link"], results))
        failed = next((r[2] for r in results if r[2]), "")
        status = f"FAILED: {failed[-3000:]}" if failed else "ok"
        return (
            f"{name}: {len(sources)} source(s), arch {arch_list}, {cflags[0]}: wall {wall:.1f} s, CPU {cpu:.1f} s "
            f"({each} s CPU), {status}"
        )


def _ninja(work: Path, jobs: int, targets: list[str]) -> tuple[float, float, str]:
    """(wall s, the compilers' CPU s, the output if it failed) of one ninja run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(["ninja", "-j", str(jobs), *targets], cwd=work, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, "" if out.returncode == 0 else (out.stdout + out.stderr).strip()


STUBS = {
    # a CPU-only torch lacks the one generated c10/cuda header; the CUDA build's says only this
    "c10/cuda/impl/cuda_cmake_macros.h": "#define C10_CUDA_BUILD_SHARED_LIBS\n",
    # this machine's CUDA toolkit has the compiler, not the math libraries: their handle types only (the old
    # layout's ATen/cuda/CUDAContext.h includes them; the real headers would add a little to its time)
    "cusparse.h": "typedef struct cusparseContext* cusparseHandle_t;\n"
    "typedef enum { CUSPARSE_STATUS_SUCCESS } cusparseStatus_t;\n",
    "cublas_v2.h": "typedef struct cublasContext* cublasHandle_t;\n"
    "typedef enum { CUBLAS_STATUS_SUCCESS } cublasStatus_t;\n",
    "cublasLt.h": "typedef struct cublasLtContext* cublasLtHandle_t;\n",
    "cusolverDn.h": "typedef struct cusolverDnContext* cusolverDnHandle_t;\n",
    "cusolver_common.h": "typedef enum { CUSOLVER_STATUS_SUCCESS } cusolverStatus_t;\n",
}


def _stubs() -> list[str]:
    """Stand-ins for the headers this machine lacks (none where torch and CUDA are complete)."""
    import torch

    include = Path(torch.__file__).parent / "include"
    cuda = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"
    missing = {k: v for k, v in STUBS.items() if not (include / k).exists() and not (cuda / k).exists()}
    if not missing:
        return []
    where = Path(tempfile.mkdtemp(prefix="header-stubs-"))
    for name, text in missing.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text("#pragma once\n" + text)
    return [str(where)]


def _objects(work: Path) -> list[str]:
    text = (work / "build.ninja").read_text()
    return [line.split()[1].rstrip(":") for line in text.splitlines() if line.startswith("build ") and ".o:" in line]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--link", action="store_true", help="link too (needs a CUDA build of torch)")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"extension build: {os.cpu_count()} CPUs, load {load:.1f}, ninja -j {args.jobs}", flush=True)
    for name in args.variants.split(","):
        sources, arch_list, cflags = VARIANTS[name]
        print(build(name, sources, arch_list, cflags, args.jobs, args.link), flush=True)


if __name__ == "__main__":
    sys.exit(main())
