"""The CUDA extension's build is kept by content: any checkout of the same sources (an A/B run's base and head
worktrees) finds the same build, an edit or another architecture builds anew, and a kept build is imported
without rebuilding. No GPU and no compiler: the build itself is a stand-in here."""

import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")

from kernels import rms_norm_kernel as rk


@pytest.fixture
def sources(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFGATE_KERNEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    checkout = tmp_path / "head" / "csrc"
    shutil.copytree(rk.CSRC, checkout)
    monkeypatch.setattr(rk, "CSRC", checkout)
    return checkout


def test_two_checkouts_of_the_same_sources_share_one_build(sources, tmp_path, monkeypatch):
    head = rk.cache_dir()
    base = tmp_path / "base" / "csrc"
    shutil.copytree(sources, base)
    monkeypatch.setattr(rk, "CSRC", base)
    assert rk.cache_dir() == head


def test_an_edited_header_or_another_architecture_is_another_build(sources, monkeypatch):
    before = rk.cache_dir()
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0a")
    assert rk.cache_dir() != before
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    header = sources / "rms_norm_kernel.cuh"
    header.write_text(header.read_text() + "\n// edited\n")
    assert rk.cache_dir() != before


def test_a_kept_build_is_used_as_it_is_and_a_missing_one_built_once(sources, monkeypatch):
    builds: list[Path] = []

    def stand_in(where: Path) -> None:
        builds.append(where)
        (where / f"{rk.NAME}.so").write_bytes(b"\x7fELF")

    monkeypatch.setattr(rk, "_build", stand_in)
    first = rk.build()
    assert first == rk.cache_dir() / "perfgate_rms_norm.so" and builds == [rk.cache_dir()]
    assert rk.build() == first and len(builds) == 1


class FakeChild:
    """A build in the background: `wait` finishes it as the child would (a build, or an exit code)."""

    def __init__(self, where: Path, code: int = 0, hangs: bool = False) -> None:
        self.where, self.code, self.hangs, self.pid = where, code, hangs, -1
        self.waited = False

    def wait(self, timeout=None):
        if self.hangs and not self.waited:
            self.waited = True
            raise rk.subprocess.TimeoutExpired("build", timeout)
        if self.code == 0:
            (self.where / f"{rk.NAME}.so").write_bytes(b"\x7fELF")
        else:
            (self.where / "build.log").write_text("ninja: build stopped: subcommand failed.\n")
        return self.code

    def poll(self):
        return None


@pytest.fixture
def background(sources, monkeypatch):
    """start_build() with its child replaced: the children it started, and no build in this process."""
    started: list[FakeChild] = []
    outcome = {"code": 0, "hangs": False}

    def popen(argv, **kwargs):
        assert argv[1:] == ["-m", "kernels.rms_norm_kernel"] and kwargs["env"]["TORCH_CUDA_ARCH_LIST"] == "9.0"
        started.append(FakeChild(rk.cache_dir(), outcome["code"], outcome["hangs"]))
        return started[-1]

    def in_process(where):
        raise AssertionError("built in the gate's process although a build ran in the background")

    monkeypatch.setattr(rk.subprocess, "Popen", popen)
    monkeypatch.setattr(rk, "_build", in_process)
    monkeypatch.setattr(rk.os, "killpg", lambda pid, sig: None)
    monkeypatch.setattr(rk, "_background", [])
    return started, outcome


def test_the_first_call_waits_for_the_build_started_in_the_background(background):
    started, _ = background
    assert rk.start_build() is True
    assert rk.build() == rk.cache_dir() / "perfgate_rms_norm.so" and len(started) == 1
    assert rk.start_build() is False and len(started) == 1  # kept now: nothing more to start


def test_a_failed_background_build_fails_the_call_with_its_log(background):
    _, outcome = background
    outcome["code"] = 1
    rk.start_build()
    with pytest.raises(rk.BuildError, match=r"build failed \(exit 1\): ninja: build stopped.*build\.log"):
        rk.build()


def test_a_hung_background_build_is_ended(background, monkeypatch):
    _, outcome = background
    outcome["hangs"] = True
    ended = []
    monkeypatch.setattr(rk.os, "killpg", lambda pid, sig: ended.append(sig))
    rk.start_build()
    with pytest.raises(rk.BuildError, match="took over"):
        rk.build()
    assert ended == [rk.signal.SIGTERM]


def test_a_background_build_nobody_waited_for_ends_with_the_session(background, monkeypatch):
    ended = []
    monkeypatch.setattr(rk.os, "killpg", lambda pid, sig: ended.append(sig))
    rk.start_build()
    rk.stop_build()
    assert ended == [rk.signal.SIGTERM] and rk._background == []
