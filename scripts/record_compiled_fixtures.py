"""Record the compiled-kernel fixtures of tests/data/compiled/ on a machine without a GPU (nvcc, and Triton's
own ptxas and cuobjdump): real cubins, ptxas's -v output, cuobjdump's, and Triton kernels compiled for sm_90.

    python scripts/record_compiled_fixtures.py [--out tests/data/compiled] [--detuned-matmul]

What only a GPU can add (the driver's register counts, the CUDA occupancy API, launches seen by CUPTI) is
recorded by lab/gpu/kernels_session.py into $OUT/compiled/.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CSRC = ROOT / "kernels" / "csrc"
sys.path.insert(0, str(ROOT))  # the kernel suite, run from anywhere


def run(argv: list[str], cwd: Path | None = None) -> str:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=900, cwd=cwd, check=True)
    return out.stdout + out.stderr


RMS_LAUNCH = CSRC / "rms_norm_launch.cu"
RMS_FLAGS = ("-O3", "--use_fast_math", f"-I{CSRC}")


def nvcc_fixtures(out: Path, cuobjdump: str) -> None:
    """The spilling kernel at its natural register count and squeezed to 32; the CUDA C++ kernel's module."""
    source = out / "spill.cu"
    for name, extra in (("spill", []), ("spill_maxreg32", ["-maxrregcount=32"])):
        cubin = out / f"{name}.cubin"
        log = run(["nvcc", "-arch=sm_90", "-cubin", "-O3", *extra, "-Xptxas", "-v", "-o", str(cubin), str(source)])
        (out / f"{name}.ptxas.txt").write_text(log)
        dump = run([cuobjdump, "--dump-resource-usage", "-sass", str(cubin)])
        (out / f"{name}.cuobjdump.txt.gz").write_bytes(gzip.compress(dump.encode(), mtime=0))
    with tempfile.TemporaryDirectory() as tmp:
        so = Path(tmp) / "rms_norm.so"
        run(["nvcc", "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", *RMS_FLAGS, "-o", str(so), str(RMS_LAUNCH)])
        run([cuobjdump, "-xelf", "all", str(so)], cwd=Path(tmp))
        cubin = max(Path(tmp).glob("*.sm_90.cubin"), key=lambda p: p.stat().st_size)
        shutil.copy(cubin, out / "rms_norm.sm_90.cubin")
        dump = run([cuobjdump, "--dump-resource-usage", "-sass", str(cubin)])
        (out / "rms_norm.sm_90.cuobjdump.txt.gz").write_bytes(gzip.compress(dump.encode(), mtime=0))
        # the module as the H100 built it (TORCH_CUDA_ARCH_LIST=9.0a): sm_90a code only, read on an sm_90 GPU
        so = Path(tmp) / "perfgate_rms_norm.so"
        gencode = "arch=compute_90a,code=sm_90a"
        run(
            [
                "nvcc",
                "-shared",
                "-Xcompiler",
                "-fPIC",
                "-cudart",
                "shared",
                "-gencode",
                gencode,
                *RMS_FLAGS,
                "-o",
                str(so),
                str(RMS_LAUNCH),
            ]
        )
        run(["strip", str(so)])
        (out / "perfgate_rms_norm.sm_90a.so.gz").write_bytes(gzip.compress(so.read_bytes(), mtime=0))


def triton_fixtures(out: Path, detuned: bool) -> None:
    """Triton kernels of the suite compiled for an H100 without one: metadata JSON and cubin."""
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    import kernels.matmul_kernel as mk
    import kernels.softmax_kernel as sk

    target = GPUTarget("cuda", 90, 32)
    softmax = ASTSource(
        sk._softmax_fused,
        signature={
            "x_ptr": "*bf16",
            "out_ptr": "*bf16",
            "n_cols": "i32",
            "stride_x": "i32",
            "stride_o": "i32",
            "BLOCK": "constexpr",
        },
        constexprs={"BLOCK": 8192},
    )
    kernels = [("triton_softmax_fused", softmax, {"num_warps": 16})]
    if detuned:
        sig = {n: "*bf16" for n in ("a_ptr", "b_ptr", "c_ptr")}
        sig |= {n: "i32" for n in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")}
        sig |= {
            n: "constexpr"
            for n in ("stride_ak", "stride_bn", "stride_cn", "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "IEEE")
        }
        for name, cfg in (
            ("triton_matmul_pinned", mk.MatmulConfig(128, 256, 64, 8, 8, 4)),
            ("triton_matmul_detuned", mk.DETUNED),
        ):
            constexprs = {
                "stride_ak": 1,
                "stride_bn": 1,
                "stride_cn": 1,
                "BLOCK_M": cfg.block_m,
                "BLOCK_N": cfg.block_n,
                "BLOCK_K": cfg.block_k,
                "GROUP_M": cfg.group_m,
                "IEEE": False,
            }
            kernels.append(
                (
                    name,
                    ASTSource(mk._matmul_kernel, signature=sig, constexprs=constexprs),
                    {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages},
                )
            )
    for name, src, options in kernels:
        k = triton.compile(src, target=target, options=options)
        meta = {
            f: getattr(k.metadata, f) for f in ("name", "num_warps", "num_stages", "num_ctas", "shared", "warp_size")
        }
        meta |= {"hash": k.hash, "triton_version": triton.__version__, "arch": "sm_90"}
        (out / f"{name}.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        if len(k.asm["cubin"]) <= 64 * 1024:  # the small ones as they are; the large ones' facts via the tests
            (out / f"{name}.cubin").write_bytes(k.asm["cubin"])
        else:
            from perfgate.compiled.cubin import find_cuobjdump, read_cubin

            facts = [vars(c) for c in read_cubin(k.asm["cubin"], find_cuobjdump())]
            (out / f"{name}.facts.json").write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "compiled")
    parser.add_argument("--detuned-matmul", action="store_true", help="also the matmul kernels (minutes)")
    args = parser.parse_args()
    from perfgate.compiled.cubin import find_cuobjdump

    args.out.mkdir(parents=True, exist_ok=True)
    nvcc_fixtures(args.out, find_cuobjdump())
    triton_fixtures(args.out, args.detuned_matmul)
    print(f"recorded into {args.out}: {', '.join(sorted(p.name for p in args.out.iterdir()))}")


if __name__ == "__main__":
    main()
