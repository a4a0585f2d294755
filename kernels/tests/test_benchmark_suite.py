"""A pytest-benchmark suite, written the way such suites are: `benchmark(fn, *args)` and
`benchmark.pedantic(...)`. Run as is with pytest-benchmark, or gated unchanged with `pytest --perfgate`
(perfgate serves the `benchmark` fixture then, with CUDA-event timing)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("pytest_benchmark")

import kernels  # noqa: E402

pytestmark = pytest.mark.gpu


def test_softmax_bf16(benchmark):
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    out = benchmark(kernels.softmax, x)
    assert out.shape == x.shape


def test_layer_norm_bf16(benchmark):
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    w, b = (
        torch.randn(8192, device="cuda", dtype=torch.bfloat16),
        torch.randn(8192, device="cuda", dtype=torch.bfloat16),
    )
    out = benchmark.pedantic(kernels.layer_norm, args=(x, w, b), rounds=100, warmup_rounds=10)
    assert out.shape == x.shape


def test_matmul_in_place_accumulate(benchmark):
    a, b = (torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16) for _ in range(2))

    def setup():  # a fresh accumulator for every round, outside the timed region
        return (torch.zeros(2048, 2048, device="cuda", dtype=torch.bfloat16), a, b), {}

    benchmark.pedantic(lambda c, a, b: c.addmm_(a, b), setup=setup, rounds=50)
