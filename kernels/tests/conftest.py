"""Kernel tests run compiled on a GPU and through Triton's interpreter on the CPU.

TRITON_INTERPRET must be set before triton decorates the kernels, i.e. before `kernels.*` is imported:
this conftest is imported first.
"""

import os

import pytest

try:
    import torch
except ImportError:  # the gate's own tests do not need torch
    torch = None

HAS_CUDA = bool(torch is not None and torch.cuda.is_available())
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """The CUDA extension's build, when it is not kept, starts now in the background (kernels/rms_norm_kernel.py),
    before perfgate's own set-up: a cold gate pays it alongside the collection and the Triton cases."""
    if HAS_CUDA:
        from kernels.rms_norm_kernel import start_build

        start_build()


def pytest_unconfigure(config):
    if HAS_CUDA:
        from kernels.rms_norm_kernel import stop_build

        stop_build()


@pytest.fixture
def device():
    if torch is None:
        pytest.skip("torch is not installed")
    return "cuda" if HAS_CUDA else "cpu"


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords and not HAS_CUDA:
            item.add_marker(skip_gpu)
