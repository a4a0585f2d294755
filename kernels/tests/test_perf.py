"""The kernel suite's perf cases: sizes that fill an H100, each custom kernel measured side by side with the
torch operation it replaces (interleaved, same inputs, same L2 flush), so every case records its speedup.

Fused operations must beat torch by 1.2x (the checklist this suite started from), and each case checks once,
before timing, that its output agrees with torch's (a fast but wrong kernel fails its test).

Run with `pytest --perfgate kernels/tests/test_perf.py`. Without --perfgate each callable runs once (and
the output check still runs). Bytes are reads + writes of one call; FLOPs count a multiply-add as 2.
"""

import pytest

torch = pytest.importorskip("torch")

import kernels  # noqa: E402

pytestmark = pytest.mark.gpu

N_ELEMWISE = 1 << 27  # 512 MiB per fp32 tensor: far beyond L2, a few hundred microseconds per call
ROWS, COLS = 16384, 8192
FUSED_MIN_SPEEDUP = 1.2
BF16 = {"rtol": 5e-2, "atol": 5e-2}  # two bf16 results, each within an ulp or two of the truth
FP32 = {"rtol": 1e-4, "atol": 1e-5}


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", dtype=dtype)


def test_copy_bandwidth(perfgate):
    """The ceiling the memory-bound kernels are judged against (device-to-device copy, copy engine)."""
    src, dst = randn(N_ELEMWISE), randn(N_ELEMWISE)
    perfgate.work(bytes_moved=2 * src.nbytes)(dst.copy_, src)


def test_vector_add(perfgate):
    x, y = randn(N_ELEMWISE), randn(N_ELEMWISE)
    perfgate.measure(
        kernels.vector_add, (x, y), reference=torch.add, check=True, rtol=0.0, atol=0.0, bytes_moved=3 * x.nbytes
    )


def test_mul_add(perfgate):
    a, b, c = randn(N_ELEMWISE), randn(N_ELEMWISE), randn(N_ELEMWISE)
    perfgate.measure(
        kernels.mul_add,
        (a, b, c),
        reference=lambda a, b, c: torch.addcmul(c, a, b),
        reference_name="torch.addcmul",
        check=True,
        **FP32,
        bytes_moved=4 * a.nbytes,
        flops=2 * a.numel(),
    )


def test_fused_add_gelu(perfgate):
    x, bias = randn(ROWS, COLS, dtype=torch.bfloat16), randn(COLS, dtype=torch.bfloat16)
    perfgate.measure(
        kernels.fused_add_gelu,
        (x, bias),
        reference=lambda x, b: torch.nn.functional.gelu(x + b),
        reference_name="torch gelu(x + b)",
        min_speedup=FUSED_MIN_SPEEDUP,
        check=True,
        **BF16,
        bytes_moved=2 * x.nbytes + bias.nbytes,
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_softmax(perfgate, dtype):
    x = randn(ROWS, COLS, dtype=dtype)
    perfgate.measure(
        kernels.softmax,
        (x,),
        reference=lambda x: torch.softmax(x, dim=-1),
        reference_name="torch.softmax",
        min_speedup=FUSED_MIN_SPEEDUP,
        check=True,
        **(FP32 if dtype == torch.float32 else BF16),
        bytes_moved=2 * x.nbytes,
    )


def test_layer_norm(perfgate):
    x = randn(ROWS, COLS, dtype=torch.bfloat16)
    w, b = randn(COLS, dtype=torch.bfloat16), randn(COLS, dtype=torch.bfloat16)
    perfgate.measure(
        kernels.layer_norm,
        (x, w, b),
        reference=lambda x, w, b: torch.nn.functional.layer_norm(x, (COLS,), w, b),
        reference_name="torch layer_norm",
        min_speedup=FUSED_MIN_SPEEDUP,
        check=True,
        **BF16,
        bytes_moved=2 * x.nbytes + 2 * w.nbytes,
    )


def test_rms_norm(perfgate):
    x, w = randn(ROWS, COLS, dtype=torch.bfloat16), randn(COLS, dtype=torch.bfloat16)
    perfgate.measure(
        kernels.rms_norm,
        (x, w),
        reference=lambda x, w: torch.nn.functional.rms_norm(x, (COLS,), w, 1e-6),
        reference_name="torch rms_norm",
        min_speedup=FUSED_MIN_SPEEDUP,
        check=True,
        **BF16,
        bytes_moved=2 * x.nbytes + w.nbytes,
    )


def test_matmul(perfgate):
    n = 4096
    a, b = randn(n, n, dtype=torch.bfloat16), randn(n, n, dtype=torch.bfloat16)
    # no speedup target: cuBLAS is the bar this Triton kernel is measured against, not one it must beat
    perfgate.measure(
        kernels.matmul,
        (a, b),
        reference=torch.matmul,
        check=True,
        rtol=5e-2,
        atol=2.0,
        bytes_moved=3 * a.nbytes,
        flops=2 * n**3,
    )


def _sdpa_flash(q, k, v):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def test_flash_attention(perfgate):
    shape = (4, 32, 4096, 128)
    q, k, v = (randn(*shape, dtype=torch.bfloat16) for _ in range(3))
    b, h, n, d = shape
    perfgate.measure(
        kernels.flash_attention,
        (q, k, v),
        reference=_sdpa_flash,
        reference_name="torch SDPA (flash)",
        min_speedup=FUSED_MIN_SPEEDUP,
        check=True,
        **BF16,
        bytes_moved=4 * q.nbytes,
        flops=4 * b * h * n * n * d,
    )
