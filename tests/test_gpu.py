"""The measurement paths on a real GPU (skipped without one): CUDA events, NVML readings and the power
protocol, peak memory, interleaved speedups, autotune capture and pinning, the device's identity."""

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from perfgate.config.settings import MeasureOptions  # noqa: E402
from perfgate.measure.case import CaseSpec, measure_case  # noqa: E402
from perfgate.measure.environment import current_environment  # noqa: E402
from perfgate.measure.gpu_state import open_device  # noqa: E402
from perfgate.model import Timer  # noqa: E402

OPTIONS = MeasureOptions(min_samples=20, max_samples=60, budget_ms=100)


def test_the_device_is_named_by_its_nvml_uuid_and_nvml_reads_it():
    env = current_environment(True)
    assert env.device_uuid.startswith("GPU-") and len(env.device_uuid) == 40
    device = open_device(env.device_uuid)
    if device is None:
        pytest.skip("pynvml (nvidia-ml-py) is not installed")
    reading = device.read()
    assert reading.sm_mhz and reading.sm_mhz > 100 and reading.power_w and device.power_limit_w


def test_a_kernel_is_timed_with_cuda_events_and_its_gpu_state_recorded():
    x = torch.randn(1 << 24, device="cuda")
    device = open_device(current_environment(True).device_uuid)
    result = measure_case(CaseSpec("t::add", torch.add, (x, x), options=OPTIONS, timer=Timer.CUDA_EVENT), device)
    assert result.timing.timer is Timer.CUDA_EVENT and 0.01 < result.timing.median_ms < 5
    assert 100 * result.timing.stdev_ms / result.timing.mean_ms < 20  # coefficient of variation, %
    peak = next(m.value for m in result.metrics if m.name == "memory.peak_allocated_bytes")
    assert peak == pytest.approx(x.nbytes, rel=0.01)  # the output, nothing else
    if device is not None:
        assert result.gpu_state.polls > 0 and result.gpu_state.sm_clock_mhz > 100


def test_a_speedup_against_torch_is_measured_side_by_side():
    x = torch.randn(4096, 4096, device="cuda")
    result = measure_case(
        CaseSpec(
            "t::relu",
            torch.relu,
            (x,),
            reference=lambda t: torch.nn.functional.gelu(t * 2 + 1),
            reference_name="gelu",
            options=OPTIONS,
            timer=Timer.CUDA_EVENT,
        )
    )
    s = result.speedup
    assert s.reference == "gelu" and s.ci_low <= s.median <= s.ci_high and s.median > 1.0
    assert len(s.reference_samples_ms) == result.timing.n_samples


def test_triton_autotune_choices_are_recorded_and_can_be_pinned():
    triton = pytest.importorskip("triton")
    import triton.language as tl

    configs = [triton.Config({"BLOCK": b}) for b in (128, 256, 1024)]

    @triton.autotune(configs=configs, key=["n"])
    @triton.jit
    def scale(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    x = torch.ones(1 << 20, device="cuda")

    def run():
        scale[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, x.numel())

    chosen = measure_case(CaseSpec("t::scale", run, options=OPTIONS, timer=Timer.CUDA_EVENT)).autotune
    assert [k for k, _ in chosen] == ["scale"]
    pinned = str(configs[2])
    again = measure_case(
        CaseSpec("t::scale", run, options=OPTIONS, timer=Timer.CUDA_EVENT, autotune_pins={"scale": pinned})
    )
    assert again.autotune == (("scale", pinned),)
    assert len(scale.configs) == 3  # given back after the case
