"""What a cubin says about its kernels: cuobjdump's resource usage (registers, stack frame, shared memory) and
SASS, normalised and hashed, with the spill traffic counted from the SASS's local-memory instructions.

- Spills: ptxas's "N bytes spill stores, M bytes spill loads" are the widths of its STL / LDL instructions
  (STL 4 bytes, STL.64 8, STL.128 16); counted here from the SASS, they match ptxas -v exactly (the recorded
  tests/data/compiled/spill32.* is a kernel built with -maxrregcount=32: 564 and 608 bytes either way).
  Local arrays use the same instructions, so a kernel with one reads as spilling what it moves.
- Shared memory: on sm_90 ptxas places the driver's reserved 1 KB (`.nv.shared.reserved.0`) inside each
  kernel's shared section, so cuobjdump reads 1152 bytes for a kernel that declares 128; the reserve is taken
  off here (the occupancy calculation adds it back, for every architecture that has one).
- The code hash (`sass_sha`): the sha256 of the kernel's machine code, its `.text.<name>` section, read from
  the cubin in Python. The bytes hold the instructions with their control words (stall counts, barriers, reuse
  flags: a different schedule is different code) and nothing that moves when nothing changed: branches are
  PC-relative, labels and the kernel's name are not in them. `normalised` / `sass_sha` hash disassembled
  SASS the same way (addresses, branch targets, labels and the name taken out) for code read as text.
- Cost: the disassembler (nvdisasm, which `cuobjdump -sass` runs) takes ~0.4 s of CPU to start, per cubin:
  ~0.6 s per kernel of a cold gate on the H200's host, 12.3 s for the bundled suite. A cubin is disassembled
  only when one of its kernels has local memory (a stack frame: the only place spills go), to count them;
  otherwise resource usage (`cuobjdump --dump-resource-usage`, a few ms) and the code hash are all it costs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.errors import PerfgateError, ToolMissing
from perfgate.measure.tools import run_tool

CUOBJDUMP_TIMEOUT_S = 120.0
RESERVED_SHARED = ".nv.shared.reserved.0"
RESERVED_SHARED_BYTES = 1024
MAX_SECTIONS = 65535
MAX_NAME_TABLE = 16 << 20
# opcodes whose last operand is a code address (a branch target, a reconvergence point)
CODE_ADDRESS_OPS = frozenset({"BRA", "BRX", "JMP", "JMX", "CALL", "BSSY", "SSY", "PBK", "PCNT", "RET", "BPT"})
_USAGE = re.compile(r"^\s*Function (?P<name>\S+):\s*$")
_USAGE_VALUES = re.compile(r"(?P<key>[A-Z_]+(?:\[\d+\])?):(?P<value>\d+)")
_ARCH = re.compile(r"^\s*code for (?P<arch>sm_\w+)")
_SASS_FUNCTION = re.compile(r"^\s*Function : (?P<name>\S+)\s*$")
_INSTRUCTION = re.compile(
    r"^\s*/\*(?P<addr>[0-9a-f]{4,})\*/\s*(?P<text>[^;]*;?)\s*(?:/\*\s*(?P<word>0x[0-9a-f]+)\s*\*/)?"
)
_WORD = re.compile(r"^\s*/\*\s*(?P<word>0x[0-9a-f]+)\s*\*/\s*$")
_LABEL_DEF = re.compile(r"^\s*(?P<label>\.L_x_\d+):\s*$")
_LABEL_USE = re.compile(r"\.L_x_\d+")
_HEX = re.compile(r"\b0x[0-9a-f]+\b")
_ARCH_NAME = re.compile(r"sm_(?P<major>\d+?)(?P<minor>\d)(?P<suffix>[af]?)")
_CUBIN_ARCH = re.compile(r"\.sm_(?P<major>\d+?)(?P<minor>\d)(?P<suffix>[af]?)\.cubin$")
_WIDTH = {"64": 8, "128": 16, "U8": 1, "S8": 1, "U16": 2, "S16": 2}


@dataclass(frozen=True)
class CubinKernel:
    """One kernel of one cubin, as its code says."""

    name: str  # the symbol (mangled for CUDA C++)
    arch: str
    registers_per_thread: int
    stack_bytes_per_thread: int
    static_shared_bytes: int  # without the reserved 1 KB
    spill_store_bytes: int
    spill_load_bytes: int
    sass_sha: str


def find_cuobjdump() -> str:
    """cuobjdump on PATH, in $CUDA_HOME / the usual CUDA directory, or the one Triton ships; ToolMissing."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    homes = [os.environ.get(k, "") for k in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    spec = importlib.util.find_spec("triton")  # its location only: importing Triton costs a second
    if spec is not None and spec.submodule_search_locations:
        homes += [str(Path(p) / "backends" / "nvidia") for p in spec.submodule_search_locations]
    for home in filter(None, homes):
        candidate = Path(home) / "bin" / "cuobjdump"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise ToolMissing("cuobjdump", "install the CUDA toolkit (or Triton, which ships one) to read compiled kernels")


def elf_section_names(data: bytes) -> tuple[str, ...]:
    """The section names of a 64-bit little-endian ELF image (a cubin); () for anything else."""
    return tuple(name for name, _, _ in _sections(lambda offset, size: data[offset : offset + size]))


def elf_file_section_names(path: Path) -> tuple[str, ...]:
    """The same for a file, reading only its headers and name table (a shared object may be a gigabyte)."""
    return tuple(name for name, _, _ in elf_file_sections(path))


def elf_file_sections(path: Path) -> tuple[tuple[str, int, int], ...]:
    """(name, file offset, size) of each section of an ELF file, from its headers only; () for anything else."""
    try:
        with path.open("rb") as f:

            def read(offset: int, size: int) -> bytes:
                f.seek(offset)
                return f.read(size)

            return _sections(read)
    except OSError:
        return ()


def fatbin_sha(path: Path) -> str:
    """sha256 of a module's device code (its `.nv_fatbin` section), what its kernels' facts depend on; "" when it
    has none. Read in pieces: a module's fatbin may be hundreds of megabytes."""
    found = next(((offset, size) for name, offset, size in elf_file_sections(path) if name == ".nv_fatbin"), None)
    if found is None:
        return ""
    digest = hashlib.sha256()
    offset, left = found
    try:
        with path.open("rb") as f:
            f.seek(offset)
            while left > 0 and (chunk := f.read(min(left, 1 << 22))):
                digest.update(chunk)
                left -= len(chunk)
    except OSError:
        return ""
    return digest.hexdigest() if left == 0 else ""


def _sections(read: Callable[[int, int], bytes]) -> tuple[tuple[str, int, int], ...]:
    head = read(0, 64)
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        return ()
    (shoff,) = struct.unpack_from("<Q", head, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
    if shentsize < 64 or shstrndx >= shnum or shnum > MAX_SECTIONS:
        return ()
    table = read(shoff, shnum * shentsize)
    if len(table) < shnum * shentsize:
        return ()
    headers = [struct.unpack_from("<IIQQQQ", table, i * shentsize) for i in range(shnum)]
    _, _, _, _, str_offset, str_size = headers[shstrndx]
    strings = read(str_offset, min(str_size, MAX_NAME_TABLE))
    out = []
    for name_offset, _, _, _, offset, size in headers:
        end = strings.find(b"\0", name_offset)
        name = strings[name_offset : end if end >= 0 else len(strings)].decode("ascii", "replace")
        out.append((name, offset, size))
    return tuple(out)


def parse_resource_usage(text: str) -> dict[str, dict[str, int]]:
    """`cuobjdump --dump-resource-usage` of one cubin -> {function: {"REG": 18, "STACK": 0, "SHARED": 1152, ...}}."""
    out: dict[str, dict[str, int]] = {}
    function = ""
    for line in text.splitlines():
        if m := _USAGE.match(line):
            function = m["name"]
        elif function and "REG:" in line:
            out[function] = {v["key"]: int(v["value"]) for v in _USAGE_VALUES.finditer(line)}
            function = ""
    return out


def split_sass(text: str) -> tuple[str, dict[str, list[str]]]:
    """`cuobjdump -sass` of one cubin -> (its architecture, {function: its lines})."""
    out: dict[str, list[str]] = {}
    arch, current = "", None
    for line in text.splitlines():
        if m := _ARCH.match(line):
            arch, current = m["arch"], None
        elif m := _SASS_FUNCTION.match(line):
            current = out.setdefault(m["name"], [])
        elif current is not None:
            current.append(line)
    return arch, out


def normalised(lines: list[str]) -> list[str]:
    """One kernel's SASS without addresses, absolute branch targets, module-wide label numbers and its name."""
    labels: dict[str, str] = {}

    def label(key: str) -> str:
        return labels.setdefault(key, f"L{len(labels)}")

    out: list[str] = []
    pending = False  # the instruction before took a code address: its encoding words go with the address
    for line in lines:
        if m := _LABEL_DEF.match(line):
            out.append(label(m["label"]) + ":")
        elif m := _INSTRUCTION.match(line):
            text = " ".join(m["text"].split())
            pending = _takes_code_address(text)
            if pending:
                text = _LABEL_USE.sub(lambda u: label(u.group(0)), text)
                hexes = _HEX.findall(text)
                if hexes:
                    last = hexes[-1]
                    text = text[: text.rindex(last)] + label(last) + text[text.rindex(last) + len(last) :]
            out.append(text if pending or not m["word"] else f"{text} {m['word']}")
        elif (m := _WORD.match(line)) and out and not pending:
            out[-1] += f" {m['word']}"
    return out


def _takes_code_address(text: str) -> bool:
    tokens = text.split()
    opcode = next((t for t in tokens if not t.startswith("@")), "")
    return opcode.split(".")[0] in CODE_ADDRESS_OPS


def sass_sha(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(normalised(lines)).encode()).hexdigest()[:16]


def local_bytes(lines: list[str]) -> tuple[int, int]:
    """(store bytes, load bytes) of the kernel's STL / LDL instructions: ptxas's spill stores and loads."""
    stores = loads = 0
    for line in lines:
        m = _INSTRUCTION.match(line)
        if not m:
            continue
        tokens = [t for t in m["text"].split() if not t.startswith("@")]
        parts = tokens[0].split(".") if tokens else [""]
        if parts[0] not in ("STL", "LDL"):
            continue
        width = next((_WIDTH[p] for p in parts[1:] if p in _WIDTH), 4)
        if parts[0] == "STL":
            stores += width
        else:
            loads += width
    return stores, loads


def kernels_of(usage_and_sass: str, reserved_in_shared: bool) -> list[CubinKernel]:
    """Every kernel of one cubin's cuobjdump `--dump-resource-usage -sass` output."""
    arch, sass = split_sass(usage_and_sass)
    out = []
    for name, values in parse_resource_usage(usage_and_sass).items():
        lines = sass.get(name, [])
        stores, loads = local_bytes(lines)
        shared = values.get("SHARED", 0)
        if reserved_in_shared and shared >= RESERVED_SHARED_BYTES:
            shared -= RESERVED_SHARED_BYTES
        out.append(
            CubinKernel(
                name=name,
                arch=arch,
                registers_per_thread=values.get("REG", 0),
                stack_bytes_per_thread=values.get("STACK", 0) + values.get("LOCAL", 0),
                static_shared_bytes=shared,
                spill_store_bytes=stores,
                spill_load_bytes=loads,
                sass_sha=sass_sha(lines) if lines else "",
            )
        )
    return out


def read_cubin(cubin: bytes, cuobjdump: str) -> list[CubinKernel]:
    """The kernels of one cubin (a Triton kernel's `asm["cubin"]`, or one extracted from a module): resource
    usage from cuobjdump, the code hash from the cubin's bytes, spills from the SASS only where a kernel has
    local memory (the disassembler's start is most of the cost: see the module's docstring)."""
    reserved = RESERVED_SHARED in elf_section_names(cubin)
    with tempfile.TemporaryDirectory(prefix="perfgate-cubin-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        usage = run_tool([cuobjdump, "--dump-resource-usage", str(path)], CUOBJDUMP_TIMEOUT_S).stdout
        local = any(v.get("STACK", 0) + v.get("LOCAL", 0) for v in parse_resource_usage(usage).values())
        if local:
            usage = run_tool([cuobjdump, "--dump-resource-usage", "-sass", str(path)], CUOBJDUMP_TIMEOUT_S).stdout
    hashes = code_shas(cubin)
    arch = cubin_sm(cubin)
    return [
        replace(k, arch=k.arch or arch, sass_sha=hashes.get(k.name, k.sass_sha)) for k in kernels_of(usage, reserved)
    ]


def code_shas(cubin: bytes) -> dict[str, str]:
    """{kernel: sha256 of its machine code (its `.text.<name>` section), 16 hex} of one cubin."""
    out = {}
    for name, offset, size in _sections(lambda offset, size: cubin[offset : offset + size]):
        if name.startswith(".text.") and offset + size <= len(cubin):
            out[name.removeprefix(".text.")] = hashlib.sha256(cubin[offset : offset + size]).hexdigest()[:16]
    return out


def cubin_sm(cubin: bytes) -> str:
    """The architecture ("sm_90") from a cubin's ELF flags ("" for what is not a cubin): the SM number is the
    flags' low byte up to ELF ABI version 7, their second byte from version 8 (CUDA 12.8 on). Architecture
    suffixes are not read."""
    if len(cubin) < 0x34 or cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        return ""
    (flags,) = struct.unpack_from("<I", cubin, 0x30)
    sm = (flags >> 8) & 0xFF if cubin[8] >= 8 else flags & 0xFF
    return f"sm_{sm}" if sm else ""


def extract_cubins(path: Path, cuobjdump: str) -> dict[str, bytes]:
    """Every cubin a native module (.so) carries, by the name cuobjdump gives it (`mod.1.sm_90a.cubin`)."""
    with tempfile.TemporaryDirectory(prefix="perfgate-module-") as tmp:
        run_tool([cuobjdump, "-xelf", "all", str(path.resolve())], CUOBJDUMP_TIMEOUT_S, cwd=Path(tmp))
        return {p.name: p.read_bytes() for p in sorted(Path(tmp).iterdir()) if p.name.endswith(".cubin")}


def cubin_arch(name: str) -> str:
    """`perfgate_rms_norm.1.sm_90a.cubin` -> "sm_90a"; "" for a name that says none."""
    m = _CUBIN_ARCH.search(name)
    return f"sm_{m['major']}{m['minor']}{m['suffix']}" if m else ""


def runnable_arch(available: list[str], device: str) -> str:
    """Which of a module's cubin architectures the driver runs on `device` ("sm_90"): its own architecture-
    specific code (sm_90a) first, then its plain one (sm_90), its family's (sm_100f on sm_103), then the newest
    older minor version of its major one (sm_80 on sm_86: binary compatible). "" when none can run (a module
    with PTX only for it: the driver compiles that at load, and perfgate reads no SASS)."""
    m = _ARCH_NAME.fullmatch(device.rstrip("af"))
    if m is None:
        return ""
    major, minor = int(m["major"]), int(m["minor"])
    ranked = []
    for arch in set(available):
        c = _ARCH_NAME.fullmatch(arch)
        if c is None or int(c["major"]) != major or int(c["minor"]) > minor:
            continue
        exact = int(c["minor"]) == minor
        if c["suffix"] == "a" and not exact:
            continue  # architecture-specific code runs on that architecture only
        rank = {("a", True): 0, ("", True): 1, ("f", True): 2}.get((c["suffix"], exact), 3)
        ranked.append((rank, -int(c["minor"]), arch))
    return min(ranked)[2] if ranked else ""


def demangled(names: list[str]) -> dict[str, str]:
    """C++ symbols made readable with c++filt when it is installed (the mangled name otherwise)."""
    tool = shutil.which("c++filt")
    if tool is None or not names:
        return {n: n for n in names}
    try:
        out = run_tool([tool], 30.0, input_text="\n".join(names) + "\n")
    except PerfgateError:  # a missing or failing demangler costs readability, not the record
        return {n: n for n in names}
    readable = out.stdout.splitlines()
    return {n: (readable[i] if i < len(readable) and readable[i] else n) for i, n in enumerate(names)}
