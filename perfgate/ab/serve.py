"""The worker's side of A/B mode: a perf case waits at its measure call and does what the coordinator asks.

`prepare` makes the first calls outside any timing (compile, autotune held to the base's choices, the
output check against the reference), measures peak memory and estimates one call; `round` takes the
number of samples asked for (interleaved with the reference, L2 flushed before each, a short warm-up
first: the other tree's process has just used the GPU); `done` hands the case back to the test with
every round's samples. The power-state wait happens once per case, in the first side's prepare: within a
case both trees are measured in alternation, so what the power state does, it does to both.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from perfgate.ab import imports, provenance
from perfgate.ab.host.process import end_sharing
from perfgate.ab.placement import free_cuda_bytes, moved, why_not_movable
from perfgate.ab.protocol import (
    CaseReady,
    Collected,
    End,
    Failed,
    Prepared,
    RoundSamples,
    TestDone,
    WorkerEnd,
    event_message,
    reply_message,
)
from perfgate.compiled.records import CompiledCase
from perfgate.errors import one_line
from perfgate.measure.autotune import AutotuneWatch
from perfgate.measure.case import CaseSpec, case_timer, compiled_kernels, first_calls, reference_name, watch_kernels
from perfgate.measure.gpu_state import NvmlDevice
from perfgate.measure.host_clock import Invocation
from perfgate.measure.memory import peak_memory
from perfgate.measure.protocol import cool_down
from perfgate.measure.timer import measure_calls
from perfgate.metrics import SPEEDUP_METRIC
from perfgate.model import CaseResult, CodeRole, CodeSource, Metric, Speedup, Timer
from perfgate.stats import ratio_ci, summarize

ROUND_WARMUP_MS = 5.0  # on a GPU: the other side has just used it (clocks, caches); on the host: at most this
ESTIMATE_SAMPLES = 5


class CaseServer:
    """One worker process's end of the protocol."""

    def __init__(self, end: WorkerEnd) -> None:
        self.end = end
        self.seen_modules: set[str] = set()  # sys.modules names already looked at for provenance
        self.ended_because = ""  # pytest's own line, when its session ends early (the plugin's hooks set it)

    def announce(self, event: Collected | TestDone) -> dict[str, Any]:
        """Say where the worker is and wait until the coordinator lets it go on; its command (after the
        collection it may name the only tests to run)."""
        self.end.send(event_message(event))
        command = self.end.receive()
        if command["cmd"] != "continue":
            raise ValueError(f"perfgate: A/B worker: expected 'continue', got {command['cmd']!r}")
        return command

    def finish(self, exitstatus: int) -> None:
        self.end.send(event_message(End(exitstatus, self.ended_because)))

    def serve_case(self, spec: CaseSpec, device: NvmlDevice | None) -> CaseResult | None:
        """Wait for commands at this case. None when the coordinator skips it (nothing measured)."""
        self.end.send(event_message(CaseReady(spec.case_id, spec.nodeid)))
        case = _Case(spec, device)
        try:
            while True:
                command = self.end.receive()
                cmd = command["cmd"]
                if cmd == "skip":
                    return None
                if cmd == "done":
                    return case.result()
                if cmd == "prepare":
                    pins = {str(k): str(v) for k, v in dict(command.get("pins") or {}).items()}
                    self._prepare(case, pins, bool(command.get("settle", True)))
                elif cmd == "round":
                    self.end.send(reply_message(case.round(int(command["samples"]))))
                else:
                    raise ValueError(f"perfgate: A/B worker: unknown command {cmd!r}")
        finally:
            case.release()

    def _prepare(self, case: _Case, pins: dict[str, str], settle: bool) -> None:
        try:
            prepared = case.prepare(pins, settle)
        except Exception as err:
            self.end.send(reply_message(Failed(one_line(f"{type(err).__name__}: {err}", 300))))
            raise  # the test fails in this tree, as it would in a plain run
        code = self._code(case.spec.fn, case.spec.reference)
        self.end.send(reply_message(replace(prepared, case=replace(prepared.case, code=code))))

    def _code(self, fn: Any, reference: Any) -> tuple[CodeSource, ...]:
        """Where this case's code came from (provenance.py): its callables, and the project's modules
        imported since the last case; nothing outside an A/B worker."""
        trees = imports.current()
        if trees is None:
            return ()
        code = provenance.callable_code(fn, CodeRole.MEASURED)
        if reference is not None:
            code += provenance.callable_code(reference, CodeRole.REFERENCE)
        return tuple(code + provenance.new_modules(trees, self.seen_modules, imports.boot_tops()))


class _Case:
    """One case's callables and what its rounds measured."""

    def __init__(self, spec: CaseSpec, device: NvmlDevice | None) -> None:
        self.spec = spec
        self.device = device
        self.timer = case_timer(spec)
        self.watch: AutotuneWatch | None = None
        self.metrics: tuple[Metric, ...] = ()
        self.compiled: CompiledCase | None = None
        self.samples: list[float] = []
        self.per_call_ms: float | None = None  # one round of the callables, from prepare's estimate
        self.reference_samples: list[float] = []
        kwargs = dict(spec.kwargs)
        self.call: Callable[[], Any] = Invocation(spec.fn, spec.args, kwargs)
        reference = spec.reference
        self.ref_call: Callable[[], Any] | None = Invocation(reference, spec.args, kwargs) if reference else None
        self.move = False  # CUDA inputs moved to a fresh place every round (placement.py)
        self.rng = random.Random()  # noqa: S311 (where buffers go, not a secret)

    def calls(
        self, args: tuple[Any, ...] | None = None, kwargs: Mapping[str, Any] | None = None
    ) -> list[Callable[[], Any]]:
        """The reference (if any) and the case; on `args`/`kwargs` instead of the test's own when given."""
        if args is None or kwargs is None:
            return [self.ref_call, self.call] if self.ref_call is not None else [self.call]
        call = Invocation(self.spec.fn, args, kwargs)
        ref = self.spec.reference
        return [Invocation(ref, args, kwargs), call] if ref is not None else [call]

    def prepare(self, pins: dict[str, str], settle: bool = True) -> Prepared:
        if self.spec.check and self.spec.reference is None:
            raise ValueError("perfgate: check=True needs a reference= callable to compare with")
        self.watch = AutotuneWatch(pins)
        first_calls(self.call, self.ref_call, self.spec, self.timer, self.watch)
        seen = watch_kernels(self.spec, self.call, self.timer)
        if self.spec.options.memory:
            self.metrics = tuple(peak_memory(self.call, self.timer))
        self.compiled = compiled_kernels(self.spec, seen, self.call)  # what "same code" compares (same_code.py)
        notes: tuple[str, ...] = ()
        if self.timer is Timer.CUDA_EVENT and self.spec.options.move_inputs:
            why_not = why_not_movable(self.spec.args, self.spec.kwargs, free_cuda_bytes())
            self.move = why_not is None
            if why_not is not None:
                notes += (f"inputs keep their place in memory every round: {why_not}",)
        waited = cool_down(self.device, self.spec.options.cooldown_max_ms) if settle else 0.0
        estimate = self._measure(ESTIMATE_SAMPLES)
        per_call = sum(float(sorted(s)[len(s) // 2]) for s in estimate.samples_ms)
        self.per_call_ms = per_call if per_call > 0 else None
        skeleton = self._result(list(estimate.samples_ms[-1]), list(estimate.samples_ms[0]) if self.ref_call else [])
        notes += tuple(f"autotune: {p}" for p in self.watch.problems)
        if waited:
            notes += (f"waited {waited:.0f} ms for the GPU's power state before the rounds",)
        return Prepared(replace(skeleton, profile_notes=notes), max(per_call, 1e-6), tuple(self.watch.problems))

    def round(self, n_samples: int) -> RoundSamples:
        placement = moved(self.spec.args, self.spec.kwargs, self.rng) if self.move else None  # alive for the round
        calls = self.calls(placement.args, placement.kwargs) if placement else self.calls()
        m = self._measure(n_samples, calls)
        if m.device_allocations:
            # one caching allocator for every side of a shared host: a timed call that had to go to the device
            # (cudaMalloc / cudaFree stall the host inside the events) measures the sharing, not the code
            end_sharing(
                f"{self.spec.case_id}'s timed calls waited on the CUDA caching allocator every side shares "
                f"({m.device_allocations} cudaMalloc / cudaFree / retries in one round)"
            )
        samples = tuple(m.samples_ms[-1])
        refs = tuple(m.samples_ms[0]) if self.ref_call is not None else ()
        self.samples += samples
        self.reference_samples += refs
        return RoundSamples(samples, refs)

    def _measure(self, n_samples: int, calls: list[Callable[[], Any]] | None = None) -> Any:
        options = replace(
            self.spec.options,
            warmup_ms=self._round_warmup_ms(n_samples),
            min_samples=max(2, n_samples),
            max_samples=max(2, n_samples),
            cooldown_max_ms=0.0,
            exclude_throttled=False,
        )
        return measure_calls(calls or self.calls(), options, self.timer, None, per_round_ms=self.per_call_ms)

    def _round_warmup_ms(self, n_samples: int) -> float:
        """A GPU round warms up for ROUND_WARMUP_MS (the device's state after the other side's work); a host
        clock's round as long as its samples take, at most that: a host has no device state to bring back (it
        matters only for calls under 25 us, whose 200 samples take less than 5 ms)."""
        if self.timer is Timer.CUDA_EVENT or self.per_call_ms is None:
            return ROUND_WARMUP_MS
        return min(ROUND_WARMUP_MS, n_samples * self.per_call_ms)

    def result(self) -> CaseResult:
        if not self.samples:  # done before any round (the other tree could not measure it)
            t0 = time.perf_counter_ns()
            self.call()
            self.samples = [(time.perf_counter_ns() - t0) / 1e6]
        return self._result(self.samples, self.reference_samples)

    def _result(self, samples: list[float], refs: list[float]) -> CaseResult:
        spec = self.spec
        metrics = list(self.metrics)
        speedup = None
        if refs and len(refs) == len(samples):
            median, lo, hi = ratio_ci(refs, samples)
            name = spec.reference_name or reference_name(spec.reference) if spec.reference else ""
            speedup = Speedup(name, tuple(refs), median, lo, hi)
            metrics.append(Metric(SPEEDUP_METRIC, median, "x", "speedup", name))
        return CaseResult(
            case_id=spec.case_id,
            timing=summarize(samples, self.timer, spec.bytes_moved, spec.flops),
            samples_ms=tuple(samples),
            metrics=tuple(metrics),
            bytes_moved=spec.bytes_moved,
            flops=spec.flops,
            thresholds=spec.thresholds,
            autotune=self.watch.choices() if self.watch else (),
            speedup=speedup,
            nodeid=spec.nodeid,
            location=spec.location,
            compiled=self.compiled,
        )

    def release(self) -> None:
        if self.watch is not None:
            self.watch.release()
