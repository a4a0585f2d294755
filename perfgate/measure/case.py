"""One perf case, measured: first call (compile, autotune) outside the timing, the output check against
the reference, interleaved sampling, peak memory in its own pass -> a CaseResult."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from perfgate.config.settings import MeasureOptions
from perfgate.measure.autotune import AutotuneWatch
from perfgate.measure.check import check_outputs
from perfgate.measure.gpu_state import NvmlDevice
from perfgate.measure.memory import peak_memory
from perfgate.measure.timer import cuda_available, measure_calls
from perfgate.metrics import SPEEDUP_METRIC
from perfgate.model import CaseResult, CaseThresholds, Metric, Speedup, Timer
from perfgate.stats import ratio_ci, summarize


@dataclass(frozen=True)
class CaseSpec:
    case_id: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    options: MeasureOptions = MeasureOptions()
    timer: Timer | None = None
    reference: Callable[..., Any] | None = None
    reference_name: str = ""
    check: bool = False
    rtol: float | None = None
    atol: float | None = None
    bytes_moved: int | None = None
    flops: int | None = None
    thresholds: CaseThresholds = CaseThresholds()
    autotune_pins: Mapping[str, str] = field(default_factory=dict)
    nodeid: str = ""
    location: tuple[str, int] | None = None
    prepare: Callable[[], Any] | None = None  # before every call, outside the timing (pytest-benchmark setup)
    calls_per_sample: int = 1  # the callable runs the work this many times (pytest-benchmark iterations)


def reference_name(ref: Callable[..., Any]) -> str:
    """`torch.add`, `torch.nn.functional.gelu`, `mymod.reference_softmax`, or a lambda's `<lambda>`."""
    module = getattr(ref, "__module__", "") or ""
    name = str(getattr(ref, "__qualname__", None) or getattr(ref, "__name__", None) or type(ref).__name__)
    if module.startswith("torch._C") or module == "torch._tensor":
        module = "torch"
    name = name.removeprefix("_VariableFunctionsClass.")  # torch.add's qualname is _VariableFunctionsClass.add
    return f"{module}.{name}" if module and module != "builtins" else name


def measure_case(spec: CaseSpec, device: NvmlDevice | None = None) -> CaseResult:
    timer = spec.timer or (Timer.CUDA_EVENT if cuda_available() else Timer.HOST)
    if spec.check and spec.reference is None:
        raise ValueError("perfgate: check=True needs a reference= callable to compare with")
    kwargs = dict(spec.kwargs)

    def call() -> Any:
        return spec.fn(*spec.args, **kwargs)

    def ref_call() -> Any:
        assert spec.reference is not None
        return spec.reference(*spec.args, **kwargs)

    watch = AutotuneWatch(spec.autotune_pins)
    try:
        _first_calls(call, ref_call if spec.reference else None, spec, timer, watch)
        calls = [ref_call, call] if spec.reference is not None else [call]
        m = measure_calls(calls, spec.options, timer, device, spec.prepare)
        samples = tuple(v / spec.calls_per_sample for v in m.samples_ms[-1])
        metrics: list[Metric] = []
        if spec.options.memory:
            if spec.prepare is not None:
                spec.prepare()
            metrics += peak_memory(call, timer)
        speedup = None
        if spec.reference is not None:
            ref_samples = m.samples_ms[0]
            median, lo, hi = ratio_ci(ref_samples, samples)
            name = spec.reference_name or reference_name(spec.reference)
            speedup = Speedup(name, ref_samples, median, lo, hi)
            metrics.append(Metric(SPEEDUP_METRIC, median, "x", "speedup", name))
    finally:
        watch.release()
    return CaseResult(case_id=spec.case_id, timing=summarize(samples, m.timer, spec.bytes_moved, spec.flops),
                      samples_ms=samples, metrics=tuple(metrics), bytes_moved=spec.bytes_moved, flops=spec.flops,
                      thresholds=spec.thresholds, gpu_state=m.gpu_state, autotune=watch.choices(), speedup=speedup,
                      nodeid=spec.nodeid, location=spec.location,
                      profile_notes=tuple(f"autotune: {p}" for p in watch.problems))


def _first_calls(call: Callable[[], Any], ref_call: Callable[[], Any] | None, spec: CaseSpec, timer: Timer,
                 watch: AutotuneWatch) -> None:
    """Compile and autotune outside the measurement; check the output against the reference's."""
    if spec.prepare is not None:
        spec.prepare()
    with watch.first_call():
        out = call()
    ref_out = ref_call() if ref_call is not None else None
    if timer is Timer.CUDA_EVENT:
        import torch

        torch.cuda.synchronize()
    if spec.check:
        check_outputs(out, ref_out, spec.rtol, spec.atol)
