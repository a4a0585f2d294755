"""What a cubin says, read from real recordings (tests/data/compiled/, scripts/record_compiled_fixtures.py):
registers, stack, spills as ptxas counts them, shared memory without the driver's reserve, and a SASS hash
that only the code moves."""

from __future__ import annotations

import gzip
import re
import struct
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.compiled import cubin as cb
from perfgate.errors import ToolMissing

DATA = Path(__file__).parent / "data" / "compiled"


def dump(name: str) -> str:
    return gzip.decompress((DATA / f"{name}.cuobjdump.txt.gz").read_bytes()).decode()


def ptxas(name: str) -> dict[str, int]:
    text = (DATA / f"{name}.ptxas.txt").read_text()
    found = {
        "registers": r"Used (\d+) registers",
        "stack": r"(\d+) bytes stack frame",
        "stores": r"(\d+) bytes spill stores",
        "loads": r"(\d+) bytes spill loads",
    }
    return {k: int(re.search(p, text).group(1)) for k, p in found.items()}


def only(kernels: list[cb.CubinKernel]) -> cb.CubinKernel:
    assert len(kernels) == 1
    return kernels[0]


@pytest.mark.parametrize("name", ["spill", "spill_maxreg32"])
def test_registers_stack_and_spill_bytes_are_what_ptxas_reported(name):
    k = only(cb.kernels_of(dump(name), reserved_in_shared=True))
    truth = ptxas(name)
    assert (k.registers_per_thread, k.stack_bytes_per_thread) == (truth["registers"], truth["stack"])
    assert (k.spill_store_bytes, k.spill_load_bytes) == (truth["stores"], truth["loads"])
    assert k.arch == "sm_90"


def test_a_kernel_squeezed_to_32_registers_spills_where_the_same_code_did_not():
    free, squeezed = (only(cb.kernels_of(dump(n), True)) for n in ("spill", "spill_maxreg32"))
    assert (free.registers_per_thread, free.spill_store_bytes + free.spill_load_bytes) == (64, 0)
    assert (squeezed.registers_per_thread, squeezed.spill_store_bytes, squeezed.spill_load_bytes) == (32, 564, 608)
    assert free.sass_sha != squeezed.sass_sha


def rms_kernels() -> dict[str, cb.CubinKernel]:
    return {k.name: k for k in cb.kernels_of(dump("rms_norm.sm_90"), reserved_in_shared=True)}


def test_the_driver_reserve_is_taken_off_shared_memory_on_sm_90():
    # the kernel declares `__shared__ float partial[32]`: 128 bytes; cuobjdump reads 1152 on sm_90
    kernels = rms_kernels()
    assert len(kernels) == 6
    assert {k.static_shared_bytes for k in kernels.values()} == {128}
    assert "SHARED:1152" in dump("rms_norm.sm_90")
    assert cb.RESERVED_SHARED in cb.elf_section_names((DATA / "rms_norm.sm_90.cubin").read_bytes())


def shifted(lines: list[str], by: int) -> list[str]:
    """The same code placed `by` bytes later: every address and branch target moved, labels renumbered."""

    def move(m: re.Match[str]) -> str:
        return f"0x{int(m.group(0), 16) + by:x}"

    out = []
    for line in lines:
        m = re.match(r"(\s*)/\*([0-9a-f]{4,})\*/(\s*)([^;]*)(;.*)", line)
        moved = line
        if m:
            text = m.group(4)
            if re.search(r"\b(BRA|BSSY|CALL|BRX)\b", text):
                text = re.sub(r"\b0x[0-9a-f]+\b", move, text)
            moved = f"{m.group(1)}/*{int(m.group(2), 16) + by:04x}*/{m.group(3)}{text}{m.group(5)}"
        out.append(moved.replace(".L_x_", ".L_x_9"))
    assert out != lines
    return out


def test_the_sass_hash_ignores_addresses_branch_targets_labels_and_the_name():
    _, sass = cb.split_sass(dump("rms_norm.sm_90"))
    name = next(n for n in sass if "Li8" in n and "bfloat16" in n)
    lines = sass[name]
    assert any(" BRA 0x" in line for line in lines), "the recording has branches to move"
    assert cb.sass_sha(shifted(lines, 0x200)) == cb.sass_sha(lines)


def test_a_different_instruction_or_schedule_is_a_different_hash():
    _, sass = cb.split_sass(dump("spill"))
    lines = sass["spill_kernel"]
    at = next(i for i, line in enumerate(lines) if "FFMA" in line)
    other_op = [*lines[:at], lines[at].replace("FFMA", "FMUL", 1), *lines[at + 1 :]]
    assert cb.sass_sha(other_op) != cb.sass_sha(lines)
    control = next(i for i, line in enumerate(lines) if cb._WORD.match(line))  # the instruction's control word
    other_schedule = [*lines[:control], lines[control].replace("0x0", "0x1", 1), *lines[control + 1 :]]
    assert cb.sass_sha(other_schedule) != cb.sass_sha(lines)


def test_the_same_kernel_in_another_module_under_another_name_hashes_the_same():
    one = only(cb.kernels_of(dump("spill_maxreg32"), True))
    renamed = dump("spill_maxreg32").replace("spill_kernel", "_Z13other_name_v2Pf")
    assert only(cb.kernels_of(renamed, True)).sass_sha == one.sass_sha


def elf(names: list[str]) -> bytes:
    """A minimal ELF64 image with these section names (the header, a name table, the section headers)."""
    strtab = b"\0" + b"".join(n.encode() + b"\0" for n in names) + b".shstrtab\0"
    offsets, at = [], 1
    for n in names:
        offsets.append(at)
        at += len(n) + 1
    shoff = 64 + len(strtab)
    headers = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    headers += [struct.pack("<IIQQQQIIQQ", off, 1, 0, 0, 64, 0, 0, 0, 1, 0) for off in offsets]
    headers.append(struct.pack("<IIQQQQIIQQ", at, 3, 0, 0, 64, len(strtab), 0, 0, 1, 0))
    head = bytearray(64)
    head[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", head, 0x28, shoff)
    struct.pack_into("<HHH", head, 0x3A, 64, len(headers), len(headers) - 1)
    return bytes(head) + strtab + b"".join(headers)


def test_section_names_are_read_from_an_image_and_from_a_file_by_its_headers_only(tmp_path):
    image = elf([".text", ".nv_fatbin"])
    assert cb.elf_section_names(image)[1:3] == (".text", ".nv_fatbin")
    (tmp_path / "m.so").write_bytes(image)
    assert ".nv_fatbin" in cb.elf_file_section_names(tmp_path / "m.so")


@pytest.mark.parametrize("data", [b"", b"\x7fELF", b"not an elf file at all" * 4, elf([".a"])[:70]])
def test_what_is_not_an_elf_file_has_no_sections(data, tmp_path):
    assert cb.elf_section_names(data) == ()
    (tmp_path / "x").write_bytes(data)
    assert cb.elf_file_section_names(tmp_path / "x") == ()
    assert cb.elf_file_section_names(tmp_path / "missing") == ()


def cuobjdump() -> str:
    try:
        return cb.find_cuobjdump()
    except ToolMissing:
        pytest.skip("no cuobjdump (the CUDA toolkit or Triton ships one)")


def test_a_recorded_cubin_reads_the_same_through_cuobjdump_as_its_recorded_output():
    tool = cuobjdump()
    data = (DATA / "spill_maxreg32.cubin").read_bytes()
    live = only(cb.read_cubin(data, tool))
    recorded = only(cb.kernels_of(dump("spill_maxreg32"), True))
    assert live == replace(recorded, sass_sha=cb.code_shas(data)["spill_kernel"])


def disassembled(monkeypatch, tool: str) -> list[str]:
    runs: list[str] = []
    real = cb.run_tool

    def counted(argv, *args, **kwargs):
        runs.append(" ".join(argv[1:-1]))
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(cb, "run_tool", counted)
    return runs


def test_a_cubin_without_local_memory_is_never_disassembled(monkeypatch):
    """nvdisasm's start costs ~0.4 s of CPU per cubin: spills live in local memory, so a cubin without any is
    read from its resource usage and its bytes alone, with the same facts."""
    tool = cuobjdump()
    runs = disassembled(monkeypatch, tool)
    data = (DATA / "spill.cubin").read_bytes()
    live = only(cb.read_cubin(data, tool))
    assert runs == ["--dump-resource-usage"]
    recorded = only(cb.kernels_of(dump("spill"), True))
    assert live == replace(recorded, sass_sha=cb.code_shas(data)["spill_kernel"])


def test_a_cubin_that_spills_is_disassembled_to_count_its_spill_bytes(monkeypatch):
    tool = cuobjdump()
    runs = disassembled(monkeypatch, tool)
    k = only(cb.read_cubin((DATA / "spill_maxreg32.cubin").read_bytes(), tool))
    assert runs == ["--dump-resource-usage", "--dump-resource-usage -sass"]
    assert (k.spill_store_bytes, k.spill_load_bytes) == (564, 608)


def test_the_code_hash_is_each_kernels_machine_code_and_its_architecture_comes_from_the_elf_flags():
    data = (DATA / "rms_norm.sm_90.cubin").read_bytes()
    hashes = cb.code_shas(data)
    assert len(hashes) == 6 and len(set(hashes.values())) == 6  # six template instances, six codes
    free, squeezed = ((DATA / f"{n}.cubin").read_bytes() for n in ("spill", "spill_maxreg32"))
    assert cb.code_shas(free)["spill_kernel"] != cb.code_shas(squeezed)["spill_kernel"]
    assert cb.cubin_sm(data) == "sm_90" and cb.cubin_sm(b"not a cubin") == ""


def test_a_triton_kernel_compiled_for_sm_90_reads_its_registers_and_no_static_shared_memory():
    tool = cuobjdump()
    k = only(cb.read_cubin((DATA / "triton_softmax_fused.cubin").read_bytes(), tool))
    assert (k.name, k.registers_per_thread, k.static_shared_bytes, k.spill_store_bytes) == ("_softmax_fused", 46, 0, 0)
    assert k.arch.startswith("sm_90")


def test_no_cuobjdump_anywhere_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(cb.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(cb, "Path", lambda p: tmp_path / "nowhere" / str(p).lstrip("/"))
    with pytest.raises(ToolMissing, match="cuobjdump"):
        cb.find_cuobjdump()
