"""Recording a case's compiled kernels without a GPU: a Triton kernel compiled for sm_90 on this machine
(tests/data/compiled/), launches seen through a stand-in of Triton's JITFunction, torch operators on the CPU,
native modules found by their ELF sections, and CUDA C++ launches from a recorded torch.profiler trace."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from collections import namedtuple
from pathlib import Path

import pytest

from perfgate.compiled import modules as mod
from perfgate.compiled.cubin import CubinKernel, kernels_of
from perfgate.compiled.inputs import describe
from perfgate.compiled.occupancy import LIMITS
from perfgate.compiled.record import KernelRecorder, Watched
from perfgate.compiled.records import KernelSource, Limiter
from perfgate.compiled.triton_kernels import Launch, TritonLaunches, facts, grid_of
from perfgate.measure.phases import KERNELS, LAUNCHES, Phases
from tests.manual_clock import ManualClock
from tests.test_compiled_cubin import DATA, dump, elf

TORCH_TRACE = Path(__file__).parent / "data" / "torch_trace.json"


def compiled_softmax(n_regs: int | None = None) -> object:
    """A Triton CompiledKernel as the launch hook sees it: its metadata, its cubin, the driver's n_regs."""
    meta = json.loads((DATA / "triton_softmax_fused.json").read_text())
    Metadata = namedtuple("Metadata", sorted(meta))
    kernel = types.SimpleNamespace(
        metadata=Metadata(**meta), asm={"cubin": (DATA / "triton_softmax_fused.cubin").read_bytes()}, hash=meta["hash"]
    )
    if n_regs is not None:
        kernel.n_regs = n_regs
    return kernel


def softmax_code(_cubin: bytes) -> list[CubinKernel]:
    """What cuobjdump reads from the recorded cubin (test_compiled_cubin checks the two agree)."""
    return [
        CubinKernel("_softmax_fused", "sm_90a", 46, 0, 0, 0, 0, "150c6c1a79451ea5"),
    ]


def test_a_triton_kernel_compiled_for_an_h100_gives_its_facts_and_occupancy():
    k = facts(compiled_softmax(), (16384, 1, 1), softmax_code, LIMITS["sm_90"], launches=1)
    assert (k.name, k.source, k.registers_per_thread) == ("_softmax_fused", KernelSource.TRITON, 46)
    assert (k.num_warps, k.block, k.grid, k.num_stages) == (16, (512, 1, 1), (16384, 1, 1), 3)
    assert (k.static_shared_bytes, k.dynamic_shared_bytes, k.spill_bytes) == (0, 64, 0)
    # 46 registers -> 48 per thread allocated, 16 warps a block: the register file fits 2 blocks = 32 warps
    assert k.occupancy is not None and (k.occupancy.blocks_per_sm, k.occupancy.pct) == (2, 50.0)
    assert k.occupancy.limiter is Limiter.REGISTERS
    assert k.sass_sha == "150c6c1a79451ea5"


def test_the_drivers_register_count_is_taken_when_the_kernel_is_loaded():
    assert facts(compiled_softmax(n_regs=40), None, softmax_code, LIMITS["sm_90"]).registers_per_thread == 40


def test_without_its_cubin_a_triton_kernel_keeps_what_its_metadata_says():
    k = facts(compiled_softmax(), None, lambda cubin: [], None)
    assert (k.registers_per_thread, k.sass_sha, k.occupancy, k.dynamic_shared_bytes) == (None, "", None, 64)


class StandInJit:
    """Triton's JITFunction as perfgate's hook meets it: `run(*args, grid, warmup, **kwargs)` returns the kernel."""

    arg_names = ("x_ptr", "n", "BLOCK")

    def __init__(self, kernel: object) -> None:
        self.kernel = kernel

    def run(self, *args, grid, warmup, **kwargs):
        return self.kernel


@pytest.fixture
def stand_in_triton(monkeypatch):
    module = types.ModuleType("triton.runtime.jit")
    module.JITFunction = StandInJit
    monkeypatch.setitem(sys.modules, "triton.runtime.jit", module)
    return StandInJit


def test_launches_are_seen_with_their_grid_and_the_hook_is_removed_after(stand_in_triton):
    original = stand_in_triton.run
    fn = stand_in_triton(kernel="k")
    watch = TritonLaunches()
    with watch.watching():
        fn.run(1, 4096, grid=lambda meta: (meta["n"] // meta["BLOCK"],), warmup=False, BLOCK=128)
        fn.run(1, 4096, grid=(3, 2), warmup=True)  # a warm-up compiles, launches nothing
    assert watch.launches == [Launch("k", (32, 1, 1))]
    assert stand_in_triton.run is original
    fn.run(1, 2, grid=(1,), warmup=False)
    assert len(watch.launches) == 1


def test_code_that_never_imported_triton_is_watched_for_nothing(monkeypatch):
    monkeypatch.delitem(sys.modules, "triton.runtime.jit", raising=False)
    watch = TritonLaunches()
    with watch.watching():
        pass
    assert watch.launches == []


@pytest.mark.parametrize(
    ("grid", "expected"),
    [
        ((4,), (4, 1, 1)),
        ([2, 3], (2, 3, 1)),
        ((1, 2, 3), (1, 2, 3)),
        (lambda m: (m["missing"],), None),
        ((1, 2, 3, 4), None),
        ("x", None),
    ],
)
def test_a_grid_is_three_dimensions_or_unknown(grid, expected):
    assert grid_of(grid, ("a",), (1,), {}) == expected


def test_inputs_are_told_apart_by_shape_dtype_strides_and_scalars_not_by_values():
    torch = pytest.importorskip("torch")
    a, b = torch.zeros(4, 8), torch.ones(4, 8)
    assert describe((a, 3), {})[1] == describe((b, 3), {})[1]
    assert describe((a, 3), {})[1] != describe((a, 4), {})[1]
    assert describe((a,), {})[1] != describe((a.t(),), {})[1]  # same shape's transpose: other strides
    assert describe((a,), {})[1] != describe((a.to(torch.bfloat16),), {})[1]
    text, _ = describe((a,), {"eps": 1e-6, "dtype": torch.float16})
    assert text == "f32[4,8](8,1)@cpu, dtype=torch.float16, eps=1e-06"


def test_torch_operators_a_call_runs_are_recorded_without_allocations_and_views():
    torch = pytest.importorskip("torch")
    from perfgate.compiled.torch_ops import TorchOps

    x = torch.randn(64, 32)
    ops = TorchOps()
    with ops.watching():
        y = torch.empty_like(x)
        torch.add(x, 1.0, out=y)
        z = (y.t() @ x).relu()
    assert z.shape == (32, 32)
    names = [name for name, _ in ops.ops]
    assert names == ["aten::add.out", "aten::mm", "aten::relu"]
    assert ops.ops[1][1] == "f32[32,64](1,32)@cpu, f32[64,32](32,1)@cpu"


def test_a_native_module_with_cuda_code_is_found_by_its_loaded_file(tmp_path, monkeypatch):
    so = tmp_path / "perfgate_rms_norm.so"
    so.write_bytes(elf([".text", ".nv_fatbin"]))
    plain = tmp_path / "other_ext.so"
    plain.write_bytes(elf([".text"]))
    maps = tmp_path / "maps"
    maps.write_text(
        f"7f00-7f01 r-xp 00000000 08:01 1 {so}\n7f02-7f03 r-xp 00000000 08:01 2 {plain}\n7f04-7f05 rw-p 0 0 0\n"
    )
    called = {"perfgate_rms_norm", "other_ext", "builtins", "torch._C", "math"}
    assert mod.cuda_modules(called, maps) == [so]
    assert mod.cuda_modules({"torch._C"}, maps) == []


def test_the_c_functions_a_call_enters_name_their_modules():
    import math

    calls = mod.NativeCalls()
    previous = sys.getprofile()
    with calls.watching():
        math.sqrt(4.0)
    assert "math" in calls.modules
    assert sys.getprofile() is previous


def test_cuda_launches_are_read_from_a_torch_profiler_trace():
    launches = mod.launches_in_trace(TORCH_TRACE)
    assert launches[0] == mod.ObservedLaunch("add_kernel", (4096, 1, 1), (128, 1, 1), 26, 0)
    assert launches[1].name.startswith("nvjet") and launches[1].shared_bytes == 213268


RMS = "_ZN16perfgate_kernels15rms_norm_kernelI13__nv_bfloat16Li8EEEvPKT_S4_PS2_xf"
RMS_READABLE = (
    "void perfgate_kernels::rms_norm_kernel<__nv_bfloat16, 8>"
    "(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, long long, float)"
)


def recorder_with_module(tmp_path: Path, observe) -> tuple[KernelRecorder, Path]:
    so = tmp_path / "perfgate_rms_norm.so"
    recorder = KernelRecorder(arch="sm_90", versions=(("torch", "2.11.0"),), observe_launches=observe)
    recorder._modules[so] = kernels_of(dump("rms_norm.sm_90"), reserved_in_shared=True)
    return recorder, so


def watched(so: Path) -> Watched:
    return Watched((), (("aten::contiguous", "bf16[16384,8192](8192,1)@cuda"),), (so,), "x", "sha")


@pytest.mark.skipif(__import__("shutil").which("c++filt") is None, reason="needs c++filt to read CUDA names")
def test_a_cuda_module_kernel_gets_the_launch_cupti_saw_and_its_occupancy(tmp_path):
    launch = mod.ObservedLaunch(RMS_READABLE, (16384, 1, 1), (512, 1, 1), 28, 128)
    recorder, so = recorder_with_module(tmp_path, lambda call: [launch, launch])
    case = recorder.compiled(watched(so), call=lambda: None)
    (k,) = [k for k in case.kernels if k.source is KernelSource.CUDA_MODULE]
    assert (k.name, k.registers_per_thread, k.static_shared_bytes, k.dynamic_shared_bytes) == (RMS_READABLE, 28, 128, 0)
    assert (k.block, k.grid, k.launches, k.detail) == ((512, 1, 1), (16384, 1, 1), 2, "perfgate_rms_norm.so")
    # 28 registers -> 32, 16 warps a block: the warp slots and the register file both allow 4 blocks
    assert k.occupancy is not None and (k.occupancy.blocks_per_sm, k.occupancy.pct) == (4, 100.0)
    assert [x.name for x in case.kernels if x.source is KernelSource.LIBRARY] == ["aten::contiguous"]
    assert case.notes == ()


@pytest.mark.skipif(__import__("shutil").which("c++filt") is None, reason="needs c++filt to read CUDA names")
def test_a_launch_from_cuptis_callbacks_gives_its_own_dynamic_shared_memory(tmp_path):
    """CUPTI's launch callbacks know the launch's dynamic shared memory, not the total the profiler reports."""
    launch = mod.ObservedLaunch(RMS_READABLE, (16384, 1, 1), (512, 1, 1), None, None, dynamic_shared_bytes=4096)
    recorder, so = recorder_with_module(tmp_path, lambda call: [launch])
    case = recorder.compiled(watched(so), call=lambda: None)
    (k,) = [k for k in case.kernels if k.source is KernelSource.CUDA_MODULE]
    assert (k.static_shared_bytes, k.dynamic_shared_bytes, k.block) == (128, 4096, (512, 1, 1))
    assert k.occupancy is not None and k.occupancy.blocks_per_sm == 4


def test_the_profilers_call_for_a_modules_launches_is_timed_apart_from_the_rest_of_the_record(tmp_path):
    """A cold gate's phase line says how much of "compiled kernels" was CUPTI's start for a CUDA module."""
    clock = ManualClock()
    phases = Phases(lambda: clock.perf_counter_ns() / 1e9)

    def observe(call):
        clock.sleep(4.0)  # torch.profiler's first start in a process
        return []

    recorder, so = recorder_with_module(tmp_path, observe)
    with phases(KERNELS):
        clock.sleep(0.5)
        recorder.compiled(watched(so), call=lambda: None, phases=phases)
    assert phases.items() == ((KERNELS, 0.5), (LAUNCHES, 4.0))


def test_without_the_launches_every_kernel_of_the_module_is_recorded_and_the_record_says_why(tmp_path):
    def no_profiler(call):
        raise RuntimeError("CUPTI unavailable")

    recorder, so = recorder_with_module(tmp_path, no_profiler)
    case = recorder.compiled(watched(so), call=lambda: None)
    module_kernels = [k for k in case.kernels if k.source is KernelSource.CUDA_MODULE]
    assert len(module_kernels) == 6 and all(k.block is None and k.occupancy is None for k in module_kernels)
    assert "launches of perfgate_rms_norm.so not seen: CUPTI unavailable" in case.notes[0]
    assert not case.complete


def test_a_call_that_fails_only_under_the_hooks_is_made_again_without_them(stand_in_triton):
    recorder = KernelRecorder(arch="sm_90")
    calls = []

    def call():
        calls.append(sys.getprofile())
        if sys.getprofile() is not None:
            raise TypeError("a tensor subclass the dispatch mode does not know")

    seen = recorder.watch(call, (), {})
    assert len(calls) == 2 and calls[1] is None
    assert "failed with the kernel hooks on (TypeError" in seen.notes[0]


def test_kernels_of_one_name_get_distinct_keys(stand_in_triton):
    recorder = KernelRecorder(arch="sm_90", _read=softmax_code)
    a, b = compiled_softmax(), compiled_softmax()
    seen = Watched((Launch(a, (1, 1, 1)), Launch(b, (2, 1, 1)), Launch(a, (1, 1, 1))), (), (), "", "s")
    case = recorder.compiled(seen, call=lambda: None)
    assert [(k.key, k.launches) for k in case.kernels] == [("_softmax_fused", 2), ("_softmax_fused#2", 1)]


def test_a_record_that_breaks_is_a_note_on_the_case_not_a_failed_case(stand_in_triton):
    def broken(_cubin):
        raise MemoryError("cuobjdump output too large")

    recorder = KernelRecorder(arch="sm_90", _read=broken)
    case = recorder.compiled(Watched((Launch(compiled_softmax(), (1, 1, 1)),), (), (), "x", "s"), call=lambda: None)
    assert case.kernels == () and case.notes[0].startswith("compiled kernels not recorded: MemoryError")


def test_launches_that_match_none_of_the_modules_kernels_are_said_and_the_code_kept(tmp_path):
    other = mod.ObservedLaunch("void other_kernel(float*)", (1, 1, 1), (32, 1, 1), 8, 0)
    recorder, so = recorder_with_module(tmp_path, lambda call: [other])
    case = recorder.compiled(watched(so), call=lambda: None)
    assert len([k for k in case.kernels if k.source is KernelSource.CUDA_MODULE]) == 6
    assert "no launch seen of perfgate_rms_norm.so's kernels (void other_kernel(float*))" in case.notes[0]


def test_watching_torch_operators_does_not_import_torch_dynamo():
    """torch wraps a dispatch mode's __torch_dispatch__ in torch._disable_dynamo unless the mode opts out, and
    the wrapper imports torch._dynamo on its first call: 7 s of the first recorded case on the H100."""
    pytest.importorskip("torch")
    code = (
        "import sys, torch\n"
        "from perfgate.compiled.torch_ops import TorchOps\n"
        "ops = TorchOps()\n"
        "with ops.watching():\n"
        "    torch.ones(2).add_(1)\n"
        "print(len(ops.ops), 'torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["2", "False"]
