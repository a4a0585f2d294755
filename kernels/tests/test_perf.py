"""The kernel suite's perf cases: sizes that fill an H100, each kernel beside its torch counterpart.

Run with `pytest --perfgate kernels/tests/test_perf.py`. Without --perfgate each callable runs once.
Bytes are reads + writes of one call; FLOPs count a multiply-add as 2.
"""

import pytest

torch = pytest.importorskip("torch")

import kernels  # noqa: E402

pytestmark = pytest.mark.gpu

N_ELEMWISE = 1 << 27  # 512 MiB per fp32 tensor: far beyond L2, a few hundred microseconds per call
ROWS, COLS = 16384, 8192


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", dtype=dtype)


def test_copy_bandwidth(perfgate):
    """The ceiling the memory-bound kernels are judged against (device-to-device copy)."""
    src, dst = randn(N_ELEMWISE), randn(N_ELEMWISE)
    perfgate.work(bytes_moved=2 * src.nbytes)(dst.copy_, src)


@pytest.mark.parametrize("impl", ["triton", "torch"])
def test_vector_add(perfgate, impl):
    x, y = randn(N_ELEMWISE), randn(N_ELEMWISE)
    fn = kernels.vector_add if impl == "triton" else torch.add
    perfgate.work(bytes_moved=3 * x.nbytes)(fn, x, y)


@pytest.mark.parametrize("impl", ["triton", "torch"])
def test_mul_add(perfgate, impl):
    a, b, c = randn(N_ELEMWISE), randn(N_ELEMWISE), randn(N_ELEMWISE)
    fn = kernels.mul_add if impl == "triton" else torch.addcmul
    args = (a, b, c) if impl == "triton" else (c, a, b)
    perfgate.work(bytes_moved=4 * a.nbytes, flops=2 * a.numel())(fn, *args)


@pytest.mark.parametrize("impl", ["triton", "torch"])
def test_fused_add_gelu(perfgate, impl):
    x, bias = randn(ROWS, COLS, dtype=torch.bfloat16), randn(COLS, dtype=torch.bfloat16)
    fn = kernels.fused_add_gelu if impl == "triton" else (lambda x, b: torch.nn.functional.gelu(x + b))
    perfgate.work(bytes_moved=2 * x.nbytes + bias.nbytes)(fn, x, bias)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("impl", ["triton", "torch"])
def test_softmax(perfgate, impl, dtype):
    x = randn(ROWS, COLS, dtype=dtype)
    fn = kernels.softmax if impl == "triton" else (lambda x: torch.softmax(x, dim=-1))
    perfgate.work(bytes_moved=2 * x.nbytes)(fn, x)


@pytest.mark.parametrize("impl", ["triton", "torch"])
def test_layer_norm(perfgate, impl):
    x = randn(ROWS, COLS, dtype=torch.bfloat16)
    w, b = randn(COLS, dtype=torch.bfloat16), randn(COLS, dtype=torch.bfloat16)
    if impl == "triton":
        fn, args = kernels.layer_norm, (x, w, b)
    else:
        fn, args = torch.nn.functional.layer_norm, (x, (COLS,), w, b)
    perfgate.work(bytes_moved=2 * x.nbytes + 2 * w.nbytes)(fn, *args)


@pytest.mark.parametrize("impl", ["cuda", "torch"])
def test_rms_norm(perfgate, impl):
    x, w = randn(ROWS, COLS, dtype=torch.bfloat16), randn(COLS, dtype=torch.bfloat16)
    if impl == "cuda":
        fn, args = kernels.rms_norm, (x, w)
    else:
        fn, args = torch.nn.functional.rms_norm, (x, (COLS,), w, 1e-6)
    perfgate.work(bytes_moved=2 * x.nbytes + w.nbytes)(fn, *args)


@pytest.mark.parametrize("impl", ["triton", "torch"])
def test_matmul(perfgate, impl):
    n = 4096
    a, b = randn(n, n, dtype=torch.bfloat16), randn(n, n, dtype=torch.bfloat16)
    fn = kernels.matmul if impl == "triton" else torch.matmul
    perfgate.work(bytes_moved=3 * a.nbytes, flops=2 * n**3)(fn, a, b)


@pytest.mark.parametrize("impl", ["triton", "torch"])
def test_flash_attention(perfgate, impl):
    shape = (4, 32, 4096, 128)
    q, k, v = (randn(*shape, dtype=torch.bfloat16) for _ in range(3))
    if impl == "triton":
        fn = kernels.flash_attention
    else:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def fn(q, k, v):
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    b, h, n, d = shape
    perfgate.work(bytes_moved=4 * q.nbytes, flops=4 * b * h * n * n * d)(fn, q, k, v)
