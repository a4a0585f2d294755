"""The shared host's contract, in process (perfgate/ab/host/): what the baton hands over is found by
introspection and is each side's own; what it does not hand over is fingerprinted, and a side that changes
it ends the shared comparison; a hand-over never writes the process's environment. The end-to-end runs
(real pytest sessions in one host) are in tests/test_ab_shared.py."""

from __future__ import annotations

import gc
import os
import sys
import threading
from pathlib import Path

import pytest

from perfgate.ab.host import baton as host
from perfgate.ab.host import environ, fingerprint, handover
from perfgate.ab.host.handover import Handed, Registry


def _sides(tmp_path: Path, baton: host.Baton) -> tuple[host.SideState, host.SideState]:
    out = []
    for name in ("base", "head"):
        tree = tmp_path / name
        tree.mkdir()
        boot = host.SideBoot(name, str(tree), str(tree), {"MINE": name}, str(tmp_path / f"{name}.log"), [], -1)
        out.append(host.SideState(boot, baton, list(sys.path), environ.python_view()))
    baton.sides = tuple(out)
    return out[0], out[1]


@pytest.fixture
def process_wide():
    path, cwd, env = list(sys.path), os.getcwd(), environ.python_view()
    yield
    sys.path[:] = path
    os.chdir(cwd)
    environ.use_view(env)


def test_torchs_switches_are_found_by_introspection_not_listed():
    pytest.importorskip("torch")
    names = {item.name for item in handover.catalogue()}
    assert {
        "torch.backends.cuda.flash_sdp_enabled",
        "torch.backends.cuda.mem_efficient_sdp_enabled",
        "torch.backends.cuda.preferred_linalg_library",
        "torch.backends.cuda.preferred_blas_library",
        "torch._C.cudnn_enabled",
        "torch._C.cudnn_benchmark",
        "torch._C.float32_matmul_precision",
        "torch default dtype",
        "torch intra-op threads",
        "logging",
        "sys.meta_path",
    } <= names


def test_a_sides_torch_switch_is_its_own_and_as_the_host_had_it_for_the_other(tmp_path, process_wide):
    torch = pytest.importorskip("torch")
    flash = Registry(lambda: tuple(i for i in handover.catalogue() if i.name.endswith("flash_sdp_enabled")))
    baton = host.Baton(frozenset(sys.modules), registry=flash)
    base, head = _sides(tmp_path, baton)
    try:
        with baton.holding(base):
            torch.backends.cuda.enable_flash_sdp(False)  # the base's conftest
        with baton.holding(head):
            assert torch.backends.cuda.flash_sdp_enabled()
        with baton.holding(base):
            assert not torch.backends.cuda.flash_sdp_enabled()
    finally:
        torch.backends.cuda.enable_flash_sdp(True)


def test_a_hand_over_never_writes_the_process_environment(tmp_path, process_wide, monkeypatch):
    writes = []
    monkeypatch.setattr(os, "putenv", lambda *a: writes.append(a))
    monkeypatch.setattr(os, "unsetenv", lambda *a: writes.append(a))
    baton = host.Baton(frozenset(sys.modules), registry=Registry(lambda: ()))
    base, head = _sides(tmp_path, baton)
    seen = []
    for state in (base, head, base):
        with baton.holding(state):
            seen.append(os.environ["MINE"])
            with baton.released():  # a wait on the pipes: another side may run meanwhile
                pass
    assert seen == ["base", "head", "base"] and writes == []  # each side's view, no putenv / unsetenv
    assert "MINE" not in os.environ


class _Ended(Exception):
    pass


def _contract_baton(tmp_path: Path, handed: tuple[Handed, ...] = ()) -> tuple[host.Baton, list[str]]:
    ended: list[str] = []
    contract = host.Contract(Registry(lambda: handed), ended.append, lambda: frozenset({threading.get_ident()}))
    contract.writes.install()
    return host.Baton(frozenset(sys.modules), contract=contract), ended


@pytest.fixture
def env_watch(monkeypatch):
    monkeypatch.setattr(os, "putenv", os.putenv)  # Writes.install replaces them: put back after the test
    monkeypatch.setattr(os, "unsetenv", os.unsetenv)


def test_a_side_that_changes_what_is_not_handed_over_ends_the_shared_comparison(tmp_path, process_wide, env_watch):
    baton, ended = _contract_baton(tmp_path)
    base, _ = _sides(tmp_path, baton)
    threshold = gc.get_threshold()
    try:
        with baton.holding(base):
            gc.set_threshold(threshold[0] + 1)  # a conftest tuning the garbage collector
    finally:
        gc.set_threshold(*threshold)
    assert len(ended) == 1 and ended[0].startswith("the base side changed gc.get_threshold()")


def test_what_is_handed_over_and_a_sides_own_keys_are_no_breach(tmp_path, process_wide, env_watch):
    value = {"v": 1}
    baton, ended = _contract_baton(tmp_path, (Handed("a switch", lambda: value["v"], lambda v: value.update(v=v)),))
    base, head = _sides(tmp_path, baton)
    with baton.holding(base):
        value["v"] = 2
        os.environ["PYTEST_CURRENT_TEST"] = "test_perf.py::test_a (call)"
        del os.environ["PYTEST_CURRENT_TEST"]
    with baton.holding(head):
        assert value["v"] == 1
    assert ended == []


def test_an_environment_variable_a_side_does_not_own_is_a_breach(tmp_path, process_wide, env_watch):
    baton, ended = _contract_baton(tmp_path)
    base, _ = _sides(tmp_path, baton)
    try:
        with baton.holding(base):
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    finally:
        os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
    assert "the environment variable CUBLAS_WORKSPACE_CONFIG" in ended[0]


def test_the_fingerprint_names_what_changed():
    before = {"gc.isenabled()": True, "Python threads": frozenset({(1, "main")})}
    after = {"gc.isenabled()": False, "Python threads": frozenset({(1, "main"), (2, "pool")})}
    assert [str(c) for c in fingerprint.changes(before, after)] == [
        "Python threads (started pool)",
        "gc.isenabled() (True -> False)",
    ]


def test_a_timed_round_that_waited_on_the_shared_allocator_ends_sharing(monkeypatch):
    from perfgate.ab import serve
    from perfgate.measure.case import CaseSpec
    from perfgate.measure.timer import Measurement
    from perfgate.model import Timer

    ended: list[str] = []
    monkeypatch.setattr(serve, "end_sharing", ended.append)
    case = serve._Case(CaseSpec("test_perf.py::test_conv", lambda: None, timer=Timer.HOST), None)
    quiet = Measurement(Timer.CUDA_EVENT, ((1.0, 1.0),), device_allocations=0)
    monkeypatch.setattr(case, "_measure", lambda n, calls=None: quiet)
    case.round(2)
    assert ended == []
    stalled = Measurement(Timer.CUDA_EVENT, ((1.0, 1.0),), device_allocations=2)
    monkeypatch.setattr(case, "_measure", lambda n, calls=None: stalled)
    case.round(2)
    assert ended == [
        "test_perf.py::test_conv's timed calls waited on the CUDA caching allocator every side shares "
        "(2 cudaMalloc / cudaFree / retries in one round)"
    ]
