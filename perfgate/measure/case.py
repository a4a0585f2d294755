"""One perf case, measured: first call (compile, autotune) outside the timing, the output check against
the reference, interleaved sampling (with the SM clock each sample ran at, where a probe can read it), peak
memory in its own pass -> a CaseResult."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from perfgate.config.settings import MeasureOptions
from perfgate.measure.autotune import AutotuneWatch
from perfgate.measure.check import check_outputs
from perfgate.measure.gpu_state import NvmlDevice
from perfgate.measure.host_clock import Invocation
from perfgate.measure.host_state import HostSampler
from perfgate.measure.memory import peak_memory
from perfgate.measure.phases import FIRST_CALLS, KERNELS, MEMORY, SAMPLES, Phases
from perfgate.measure.rounds import FixedRounds, run_rounds
from perfgate.measure.sm_clock import cycle_stats, probe_for, unavailable
from perfgate.measure.timer import cuda_available, host_clock_for, measure_calls
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
    kernels: Any = None  # a compiled.record.KernelRecorder: record the kernels the case launches (CUDA only)


def reference_name(ref: Callable[..., Any]) -> str:
    """`torch.add`, `torch.nn.functional.gelu`, `mymod.reference_softmax`, or a lambda's `<lambda>`."""
    module = getattr(ref, "__module__", "") or ""
    name = str(getattr(ref, "__qualname__", None) or getattr(ref, "__name__", None) or type(ref).__name__)
    if module.startswith("torch._C") or module == "torch._tensor":
        module = "torch"
    name = name.removeprefix("_VariableFunctionsClass.")  # torch.add's qualname is _VariableFunctionsClass.add
    return f"{module}.{name}" if module and module != "builtins" else name


def case_timer(spec: CaseSpec) -> Timer:
    """The timer a case is measured with: CUDA events on a GPU, else the host clock `host_timer` names (the wall
    clock, or the thread's or the process's CPU time)."""
    timer = spec.timer or (Timer.CUDA_EVENT if cuda_available() else Timer.HOST)
    return spec.options.host_timer.timer if timer is Timer.HOST else timer


def measure_case(spec: CaseSpec, device: NvmlDevice | None = None) -> CaseResult:
    timer = case_timer(spec)
    if spec.check and spec.reference is None:
        raise ValueError("perfgate: check=True needs a reference= callable to compare with")
    kwargs = dict(spec.kwargs)
    call = Invocation(spec.fn, spec.args, kwargs)
    ref_call = Invocation(spec.reference, spec.args, kwargs) if spec.reference is not None else None
    watch = AutotuneWatch(spec.autotune_pins)
    phase = Phases()
    try:
        with phase(FIRST_CALLS):
            first_calls(call, ref_call, spec, timer, watch)
        with phase(KERNELS):
            seen = watch_kernels(spec, call, timer)
        probe = probe_for(timer)
        host = HostSampler().start()
        with phase(SAMPLES):
            calls = [ref_call, call] if ref_call is not None else [call]
            m = measure_calls(calls, spec.options, timer, device, probe=probe)
        host_state = host.stop()
        samples = m.samples_ms[-1]
        cycles = cycle_stats(samples, m.clocks_mhz[-1]) if m.clocks_mhz else None
        metrics: list[Metric] = []
        if spec.options.memory:
            with phase(MEMORY):
                metrics += peak_memory(call, timer)
        speedup = None
        if spec.reference is not None:
            speedup = _speedup(spec.reference_name or reference_name(spec.reference), m.samples_ms[0], samples)
        if speedup is not None:
            metrics.append(Metric(SPEEDUP_METRIC, speedup.median, "x", "speedup", speedup.reference))
    finally:
        watch.release()
    with phase(KERNELS):
        compiled = compiled_kernels(spec, seen, call, phase)
    return CaseResult(
        case_id=spec.case_id,
        compiled=compiled,
        phases_s=phase.items(),
        timing=summarize(samples, m.timer, spec.bytes_moved, spec.flops),
        samples_ms=samples,
        metrics=tuple(metrics),
        bytes_moved=spec.bytes_moved,
        flops=spec.flops,
        thresholds=spec.thresholds,
        gpu_state=m.gpu_state,
        host_state=host_state,
        autotune=watch.choices(),
        speedup=speedup,
        nodeid=spec.nodeid,
        location=spec.location,
        profile_notes=tuple(f"autotune: {p}" for p in watch.problems) + _cycles_note(timer, probe, cycles),
        calls_per_sample=m.calls_per_sample[-1] if m.calls_per_sample else 1,
        cycles=cycles,
    )


def _speedup(name: str, ref_samples: tuple[float, ...], samples: tuple[float, ...]) -> Speedup:
    """The case against its reference `name`: the ratio of their medians, with its confidence interval."""
    median, lo, hi = ratio_ci(ref_samples, samples)
    return Speedup(name, ref_samples, median, lo, hi)


def _cycles_note(timer: Timer, probe: object, cycles: object) -> tuple[str, ...]:
    """Why a CUDA case has no cycles (it is then gated on time): the probe could not run, or missed its samples."""
    if timer is not Timer.CUDA_EVENT or cycles is not None:
        return ()
    if probe is None:
        return (f"cycles: no SM clock probe ({unavailable() or 'not available'}): gated on time",)
    return ("cycles: fewer than half of the samples had an SM clock reading: gated on time",)


def measure_rounds_case(spec: CaseSpec, plan: FixedRounds) -> tuple[CaseResult, Any]:
    """pytest-benchmark's pedantic plan, call for call (rounds.py): no first call, no memory pass.
    Returns the case and the value pytest-benchmark would hand back (the last round's, iterations == 1)."""
    timer = case_timer(spec)
    watch = AutotuneWatch(spec.autotune_pins)
    read_ns = host_clock_for(timer).read_ns if timer.on_host else None
    try:
        m = run_rounds(plan, timer, spec.options.flush_l2, first_round=watch.first_call(), read_ns=read_ns)
    finally:
        watch.release()
    case = CaseResult(
        case_id=spec.case_id,
        timing=summarize(m.samples_ms, timer, spec.bytes_moved, spec.flops),
        samples_ms=m.samples_ms,
        bytes_moved=spec.bytes_moved,
        flops=spec.flops,
        thresholds=spec.thresholds,
        autotune=watch.choices(),
        nodeid=spec.nodeid,
        location=spec.location,
        profile_notes=tuple(f"autotune: {p}" for p in watch.problems),
        calls_per_sample=plan.iterations,
    )
    return case, m.result


def watch_kernels(spec: CaseSpec, call: Callable[[], Any], timer: Timer) -> Any:
    """One more call with the compiled-kernel hooks on (compiled/record.py), outside the timing; None when the
    session records no kernels or the case is not timed on a GPU."""
    if spec.kernels is None or timer is not Timer.CUDA_EVENT:
        return None
    return spec.kernels.watch(call, spec.args, spec.kwargs)


def compiled_kernels(spec: CaseSpec, seen: Any, call: Callable[[], Any], phases: Phases | None = None) -> Any:
    """The facts of what watch_kernels saw (read after the samples: cuobjdump, a CUDA module's launches, timed
    apart in `phases`)."""
    return None if seen is None else spec.kernels.compiled(seen, call, phases)


def first_calls(
    call: Callable[[], Any], ref_call: Callable[[], Any] | None, spec: CaseSpec, timer: Timer, watch: AutotuneWatch
) -> None:
    """Compile and autotune outside the measurement; check the output against the reference's."""
    with watch.first_call():
        out = call()
    ref_out = ref_call() if ref_call is not None else None
    if timer is Timer.CUDA_EVENT:
        import torch

        torch.cuda.synchronize()
    if spec.check:
        check_outputs(out, ref_out, spec.rtol, spec.atol)
