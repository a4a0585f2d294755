"""What a profiling child does around one case, with torch.cuda's calls recorded instead of run."""

import pytest

torch = pytest.importorskip("torch")

from perfgate.measure.in_profiler import NVTX_PREFIX, WARMUP_CALLS, run_under_profiler  # noqa: E402
from perfgate.measure.profiler_registry import profiler_named  # noqa: E402


@pytest.fixture
def events(monkeypatch):
    log = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: log.append("sync"))
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda text: log.append(f"push {text}"))
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: log.append("pop"))
    monkeypatch.setattr(torch.cuda.profiler, "start", lambda: log.append("start"))
    monkeypatch.setattr(torch.cuda.profiler, "stop", lambda: log.append("stop"))
    return log


def test_nsys_child_warms_up_then_runs_the_calls_inside_one_range(events):
    ms = run_under_profiler(profiler_named("nsys").child, "t.py::case", lambda: events.append("call"), (), {})
    assert events == ["call"] * WARMUP_CALLS + [
        "sync",
        f"push {NVTX_PREFIX}t.py::case",
        "call",
        "call",
        "call",
        "sync",
        "pop",
    ]
    assert ms >= 0


def test_ncu_child_profiles_exactly_one_call_and_nothing_after(events):
    run_under_profiler(profiler_named("ncu").child, "t.py::case", lambda: events.append("call"), (), {})
    assert events == ["call"] * WARMUP_CALLS + [
        "sync",
        "start",
        f"push {NVTX_PREFIX}t.py::case",
        "call",
        "sync",
        "pop",
        "stop",
    ]
