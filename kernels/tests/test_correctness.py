"""Every kernel against its float64 reference on fresh random inputs: tails, tiny, non-square shapes.

Outputs are poisoned with NaN before each run (through `out=`), so an element a kernel forgets to
write fails the comparison; NaN never passes (equal_nan=False).
"""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import kernels  # noqa: E402
from kernels import reference  # noqa: E402
from kernels.matmul_kernel import MatmulConfig  # noqa: E402
from kernels.tests.conftest import HAS_CUDA  # noqa: E402

TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2)}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def poisoned(shape, dtype, device):
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def assert_close(actual, expected, dtype, scale=1.0):
    atol, rtol = TOL[dtype]
    torch.testing.assert_close(
        actual.double(), expected.double().to(actual.device), atol=atol * scale, rtol=rtol * scale, equal_nan=False
    )


# Triton's interpreter computes tl.dot on bf16 tiles wrongly (garbage of ~1e9 even for 1x1x1); the
# compiled kernels are checked in bf16 on the GPU.
needs_compiled_bf16_dot = pytest.mark.skipif(not HAS_CUDA, reason="Triton interpreter mis-computes bf16 tl.dot")
DOT_DTYPES = [torch.float32, torch.float16, pytest.param(torch.bfloat16, marks=needs_compiled_bf16_dot)]


def rand(shape, dtype, device, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)


ELEMENTWISE_SHAPES = [(1,), (7,), (1000,), (1025,), (3, 257), (2, 3, 129)] + ([((1 << 20) + 3,)] if HAS_CUDA else [])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ELEMENTWISE_SHAPES)
def test_vector_add_matches_reference(shape, dtype, device):
    x, y = rand(shape, dtype, device, 1), rand(shape, dtype, device, 2)
    out = poisoned(shape, dtype, device)
    assert kernels.vector_add(x, y, out=out) is out
    assert_close(out, reference.vector_add(x, y), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ELEMENTWISE_SHAPES)
def test_mul_add_matches_reference(shape, dtype, device):
    a, b, c = (rand(shape, dtype, device, s) for s in (3, 4, 5))
    out = kernels.mul_add(a, b, c, out=poisoned(shape, dtype, device))
    assert_close(out, reference.mul_add(a, b, c), dtype, scale=2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (4, 1000), (3, 2, 129)] + ([(4096, 4099)] if HAS_CUDA else []))
def test_fused_add_gelu_matches_reference(shape, dtype, device):
    x, bias = rand(shape, dtype, device, 6), rand(shape[-1:], dtype, device, 7)
    out = kernels.fused_add_gelu(x, bias, out=poisoned(shape, dtype, device))
    assert_close(out, reference.fused_add_gelu(x, bias), dtype, scale=2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape", [(1, 1), (3, 7), (17, 1000), (2, 20000)] + ([(1024, 4097), (64, 65536)] if HAS_CUDA else [])
)
def test_softmax_matches_reference(shape, dtype, device):
    x = rand(shape, dtype, device, 8) * 4
    out = kernels.softmax(x, out=poisoned(shape, dtype, device))
    assert_close(out, reference.softmax(x), dtype)


def test_softmax_handles_large_magnitudes_without_nan(device):
    x = torch.tensor([[1e4, -1e4, 0.0], [-1e30, -1e30, -1e30]], device=device)
    out = kernels.softmax(x)
    assert not out.isnan().any()
    assert_close(out, reference.softmax(x), torch.float32)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape", [(1, 1), (3, 7), (17, 1000), (2, 3, 129), (2, 17000)] + ([(4096, 8192)] if HAS_CUDA else [])
)
def test_layer_norm_matches_reference(shape, dtype, device):
    x = rand(shape, dtype, device, 9) * 3 + 1
    w, b = rand(shape[-1:], dtype, device, 10), rand(shape[-1:], dtype, device, 11)
    out = kernels.layer_norm(x, w, b, out=poisoned(shape, dtype, device))
    assert_close(out, reference.layer_norm(x, w, b), dtype, scale=4)


@pytest.mark.parametrize("dtype", DOT_DTYPES)
@pytest.mark.parametrize(
    "mnk",
    [(1, 1, 1), (17, 33, 65), (64, 48, 100), (5, 200, 31)]
    + ([(1000, 1500, 700), (4096, 4096, 4096)] if HAS_CUDA else []),
)
def test_matmul_matches_reference(mnk, dtype, device):
    m, n, k = mnk
    a, b = rand((m, k), dtype, device, 12), rand((k, n), dtype, device, 13)
    # small shapes run a pinned tile (autotuning every shape x dtype would compile dozens of configs);
    # the 4096^3 case exercises the autotuned path
    cfg = None if m >= 4096 else SMALL_TILE
    out = kernels.matmul(a, b, config=cfg, out=poisoned((m, n), dtype, device))
    # error grows like sqrt(k) for random data; the output is rounded to the input dtype
    assert_close(out, reference.matmul(a, b), dtype, scale=max(1.0, k**0.5))


SMALL_TILE = MatmulConfig(block_m=64, block_n=64, block_k=32, group_m=4, num_warps=4, num_stages=2)


def test_matmul_pinned_config_matches_reference(device):
    a, b = rand((70, 90), torch.float16, device, 14), rand((90, 50), torch.float16, device, 15)
    cfg = MatmulConfig(block_m=32, block_n=32, block_k=32, num_warps=4, num_stages=1)
    assert_close(kernels.matmul(a, b, config=cfg), reference.matmul(a, b), torch.float16, scale=10)


@pytest.mark.parametrize("dtype", DOT_DTYPES[1:])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    "shape",
    [(1, 1, 1, 16), (1, 2, 37, 64), (2, 1, 100, 32), (1, 1, 65, 128)]
    + ([(2, 4, 1000, 64), (1, 8, 4096, 128)] if HAS_CUDA else []),
)
def test_flash_attention_matches_reference(shape, causal, dtype, device):
    q, k, v = (rand(shape, dtype, device, s) for s in (16, 17, 18))
    pinned = {} if shape[2] >= 4096 else {"block_m": 64, "block_n": 32}  # autotune only the big shape
    out = kernels.flash_attention(q, k, v, causal=causal, out=poisoned(shape, dtype, device), **pinned)
    assert_close(out, reference.flash_attention(q, k, v, causal=causal), dtype, scale=2)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda d: kernels.vector_add(
                torch.ones(3, device=d, dtype=torch.int32), torch.ones(3, device=d, dtype=torch.int32)
            ),
            "dtype",
        ),
        (lambda d: kernels.vector_add(torch.ones(3, device=d), torch.ones(4, device=d)), "shapes differ"),
        (lambda d: kernels.softmax(torch.ones(2, 3, 4, device=d)), "2-D"),
        (lambda d: kernels.matmul(torch.ones(2, 3, device=d), torch.ones(4, 2, device=d)), "inner dimensions"),
        (lambda d: kernels.flash_attention(*(torch.ones(1, 1, 4, 48, device=d, dtype=torch.float16),) * 3), "head_dim"),
        (lambda d: kernels.flash_attention(*(torch.ones(1, 1, 4, 64, device=d),) * 3), "dtype"),
        (lambda d: kernels.fused_add_gelu(torch.ones(2, 3, device=d), torch.ones(2, device=d)), "bias"),
        (
            lambda d: kernels.layer_norm(torch.ones(2, 3, device=d), torch.ones(2, device=d), torch.ones(3, device=d)),
            "weight",
        ),
    ],
)
def test_unsupported_input_is_a_clear_value_error(call, message, device):
    with pytest.raises(ValueError, match=message):
        call(device)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (33, 1000), (4096, 4096), (2, 3, 70000)])
def test_cuda_rms_norm_matches_reference(shape, dtype, device):
    x, w = rand(shape, dtype, device, 19), rand(shape[-1:], dtype, device, 20)
    # poison the caching allocator's next block: the kernel allocates its output itself
    torch.full(shape, float("nan"), dtype=dtype, device=device)
    out = kernels.rms_norm(x, w)
    assert_close(out, reference.rms_norm(x, w), dtype, scale=4)


def test_the_package_exports_every_kernel_it_can_load():
    assert kernels.__all__ == sorted(kernels._WHERE)
