"""Compiled code is read once: a cubin by its content, a module by its device code, kept in the process and in
the cache directory between runs (a warm gate runs no cuobjdump), shared by checkouts of the same code."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from perfgate.compiled import cache, cubin
from perfgate.compiled.cache import CodeReader
from perfgate.compiled.cubin import CubinKernel
from perfgate.compiled.modules import launches_in_trace
from perfgate.compiled.record import KernelRecorder, Watched
from perfgate.compiled.records import KernelSource
from perfgate.compiled.triton_kernels import Launch
from perfgate.errors import PerfgateError, ToolMissing
from tests.test_compiled_record import compiled_softmax

DATA = Path(__file__).parent / "data" / "compiled"
H100_TRACE = DATA / "h100_rms_norm_torch_trace.json"


def sm_90a_module(where: Path) -> Path:
    """The RMSNorm launchers built for sm_90a only, as the H100 built the extension (TORCH_CUDA_ARCH_LIST=9.0a)."""
    where.mkdir(parents=True, exist_ok=True)
    path = where / "perfgate_rms_norm.so"
    path.write_bytes(gzip.decompress((DATA / "perfgate_rms_norm.sm_90a.so.gz").read_bytes()))
    return path


class StandIn:
    """cuobjdump's two uses, counted: a module's cubins extracted, a cubin read."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, cubins: dict[str, bytes]) -> None:
        self.extracted: list[Path] = []
        self.read: list[bytes] = []
        self.cubins = cubins
        monkeypatch.setattr(cache, "extract_cubins", self.extract)
        monkeypatch.setattr(cache, "read_cubin", self.read_cubin)

    def extract(self, path: Path, tool: str) -> dict[str, bytes]:
        self.extracted.append(path)
        return self.cubins

    def read_cubin(self, data: bytes, tool: str) -> list[CubinKernel]:
        self.read.append(data)
        return [CubinKernel(f"k{len(data)}", "sm_90a", 28, 0, 128, 0, 0, "ab" * 8)]


def test_a_cubin_is_read_once_and_kept_for_the_next_run(tmp_path, monkeypatch):
    tool = StandIn(monkeypatch, {})
    first = CodeReader("cuobjdump", tmp_path)
    assert first.cubin(b"cubin") == first.cubin(b"cubin")
    assert len(tool.read) == 1
    assert CodeReader("cuobjdump", tmp_path).cubin(b"cubin") == first.cubin(b"cubin") and len(tool.read) == 1
    (stored,) = tmp_path.iterdir()
    stored.write_text("{damaged")
    assert CodeReader("cuobjdump", tmp_path).cubin(b"cubin") == first.cubin(b"cubin") and len(tool.read) == 2


def test_a_module_is_read_by_its_device_code_once_whatever_checkout_it_is_in(tmp_path, monkeypatch):
    tool = StandIn(monkeypatch, {"m.1.sm_90a.cubin": b"a" * 10, "m.2.sm_80.cubin": b"b" * 20})
    base, head = sm_90a_module(tmp_path / "base"), sm_90a_module(tmp_path / "head")  # A/B: two worktrees
    kernels = CodeReader("cuobjdump", tmp_path / "cache").module(base, "sm_90")
    assert [k.name for k in kernels] == ["k10"]  # the sm_90a cubin, not the sm_80 one
    assert CodeReader("cuobjdump", tmp_path / "cache").module(head, "sm_90") == kernels
    assert (len(tool.extracted), len(tool.read)) == (1, 1)


def test_a_module_with_no_code_for_this_gpu_says_what_it_carries(tmp_path, monkeypatch):
    StandIn(monkeypatch, {"m.1.sm_100a.cubin": b"a", "m.2.sm_120.cubin": b"b"})
    with pytest.raises(PerfgateError, match=r"carries no code that runs on sm_90 \(sm_100a, sm_120; PTX"):
        CodeReader("cuobjdump", tmp_path).module(sm_90a_module(tmp_path), "sm_90")
    recorder = KernelRecorder(arch="sm_90", reader=CodeReader("cuobjdump", None), observe_launches=_no_profiler)
    case = recorder.compiled(Watched((), (), (sm_90a_module(tmp_path),), "x", "s"), call=lambda: None)
    assert case.kernels == () and "carries no code that runs on sm_90" in case.notes[0]


def _no_profiler(call: object) -> list:
    raise AssertionError("no profiler is started for a module with nothing to match its launches with")


@pytest.mark.parametrize(
    ("available", "device", "chosen"),
    [
        (["sm_90a"], "sm_90", "sm_90a"),  # the H100's extension: TORCH_CUDA_ARCH_LIST=9.0a
        (["sm_90", "sm_90a"], "sm_90", "sm_90a"),
        (["sm_80", "sm_86"], "sm_89", "sm_86"),  # binary compatible within a major version
        (["sm_86"], "sm_80", ""),  # never newer than the GPU
        (["sm_90a"], "sm_100", ""),
        (["sm_100a"], "sm_103", ""),  # architecture-specific: that architecture only
        (["sm_100f"], "sm_103", "sm_100f"),  # family-specific: its family
        ([], "sm_90", ""),
    ],
)
def test_the_cubin_the_driver_runs_is_the_gpus_own_then_an_older_compatible_one(available, device, chosen):
    assert cubin.runnable_arch(available, device) == chosen


def test_cubin_names_say_their_architecture():
    assert cubin.cubin_arch("perfgate_rms_norm.1.sm_90a.cubin") == "sm_90a"
    assert cubin.cubin_arch("x.12.sm_100f.cubin") == "sm_100f"
    assert cubin.cubin_arch("x.cubin") == ""


def test_the_device_code_of_a_module_is_hashed_and_nothing_else(tmp_path):
    so = sm_90a_module(tmp_path)
    same = sm_90a_module(tmp_path / "copy")
    assert cubin.fatbin_sha(so) == cubin.fatbin_sha(same) != ""
    assert cubin.fatbin_sha(tmp_path / "missing.so") == ""
    (tmp_path / "plain.so").write_bytes(b"\x7fELF" + b"\0" * 100)
    assert cubin.fatbin_sha(tmp_path / "plain.so") == ""


def cuobjdump() -> str:
    try:
        return cubin.find_cuobjdump()
    except ToolMissing:
        pytest.skip("no cuobjdump (the CUDA toolkit or Triton ships one)")


def test_a_warm_run_runs_no_cuobjdump_for_code_it_read_before(tmp_path, monkeypatch):
    """Two runs of a case that launches a Triton kernel and enters a CUDA extension: the first runs cuobjdump
    for the kernel's cubin, the module's extraction and each of the module's cubins; the second none."""
    tool = cuobjdump()
    runs: list[list[str]] = []
    real = cubin.run_tool

    def counted(argv, *args, **kwargs):
        if argv[0] == tool:
            runs[-1].append(" ".join(argv[1:-1]))  # its options, without the file
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(cubin, "run_tool", counted)
    so = sm_90a_module(tmp_path / "ext")
    for _ in range(2):
        runs.append([])
        reader = CodeReader(tool, tmp_path / "cache")
        recorder = KernelRecorder(
            arch="sm_90", reader=reader, _read=reader.cubin, observe_launches=lambda call: launches_in_trace(H100_TRACE)
        )
        seen = Watched((Launch(compiled_softmax(), (16384, 1, 1)),), (), (so,), "x", "s")
        case = recorder.compiled(seen, call=lambda: None)
        assert {k.source for k in case.kernels} == {KernelSource.TRITON, KernelSource.CUDA_MODULE}, case.notes
    read = "--dump-resource-usage"  # no local memory in any of them: nothing disassembled
    assert runs[0] == [read, "-xelf all", read, read]  # the Triton cubin; the module, its two sm_90a cubins
    assert runs[1] == []
