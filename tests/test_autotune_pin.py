"""A pinned autotuner compiles and launches only the baseline's config (a cold gate compiles one config, not
every candidate); without a pin, Triton benchmarks them all. Triton's own Autotuner, a stand-in kernel."""

from __future__ import annotations

import pytest

triton = pytest.importorskip("triton")

from triton.runtime.autotuner import Autotuner  # noqa: E402

from perfgate.measure.autotune import AutotuneWatch  # noqa: E402


def _matmul_kernel(x, n, B):  # the function Triton's autotuner names the kernel by
    pass


class StandInKernel:
    """What the autotuner wraps: `fn` leads to the Python function, `run` compiles and launches one config."""

    fn = staticmethod(_matmul_kernel)

    def __init__(self) -> None:
        self.launched: list[int] = []

    def run(self, *args, **kwargs):
        self.launched.append(kwargs["B"])
        return "kernel"


CONFIGS = [triton.Config({"B": b}, num_warps=w) for b, w in ((64, 4), (128, 8), (256, 8))]


def bench(call, **_):
    call()  # each benchmarked config is compiled and launched
    return 1.0


def tuner(kernel: StandInKernel) -> Autotuner:
    return Autotuner(kernel, ["x", "n"], list(CONFIGS), ["n"], None, None, do_bench=bench)


def test_a_pinned_autotuner_compiles_only_the_pinned_config():
    kernel = StandInKernel()
    watch = AutotuneWatch({"_matmul_kernel": str(CONFIGS[1])})
    t = tuner(kernel)
    with watch.first_call():
        t.run(1, 4096, grid=(1,), warmup=False)
    assert kernel.launched == [128]
    assert watch.choices() == (("_matmul_kernel", str(CONFIGS[1])),)
    watch.release()
    assert len(t.configs) == 3  # the other cases tune freely again


def test_without_a_pin_every_candidate_is_compiled_and_benchmarked():
    kernel = StandInKernel()
    tuner(kernel).run(1, 4096, grid=(1,), warmup=False)
    assert sorted(set(kernel.launched)) == [64, 128, 256]
