"""CompiledCase <-> plain dicts: the JSON results, baseline files, measurement children and A/B workers.

Strict on the way in (a true record or one ValueError naming the field): counts are integers in
[0, 2**63), dimensions at least 1, an occupancy's blocks within every limit it names, names printable.
"""

from __future__ import annotations

from typing import Any

from perfgate.compiled.records import CompiledCase, KernelFacts, KernelSource, Limiter, Occupancy
from perfgate.parse.invariants import INT64_MAX, has_control

_INTS = (
    "registers_per_thread",
    "spill_store_bytes",
    "spill_load_bytes",
    "stack_bytes_per_thread",
    "static_shared_bytes",
    "dynamic_shared_bytes",
    "num_warps",
    "num_stages",
)
_OCCUPANCY_INTS = (
    "blocks_per_sm",
    "warps_per_block",
    "max_warps_per_sm",
    "by_registers",
    "by_shared_memory",
    "by_warps",
    "by_blocks",
)
MAX_KERNELS = 10_000  # per case: more is not one call of one case


def to_dict(c: CompiledCase) -> dict[str, Any]:
    return {
        "kernels": [_kernel_dict(k) for k in c.kernels],
        "inputs_sha": c.inputs_sha,
        "inputs": c.inputs,
        "arch": c.arch,
        "versions": {k: v for k, v in c.versions},
        "notes": list(c.notes),
    }


def _kernel_dict(k: KernelFacts) -> dict[str, Any]:
    out: dict[str, Any] = {"name": k.name, "key": k.key, "source": k.source.value}
    out.update({f: getattr(k, f) for f in _INTS})
    out["block"] = list(k.block) if k.block else None
    out["grid"] = list(k.grid) if k.grid else None
    out["occupancy"] = _occupancy_dict(k.occupancy)
    out.update(sass_sha=k.sass_sha, launches=k.launches, detail=k.detail)
    return out


def _occupancy_dict(o: Occupancy | None) -> dict[str, Any] | None:
    if o is None:
        return None
    return {
        "pct": round(o.pct, 4),
        "blocks_per_sm": o.blocks_per_sm,
        "warps_per_block": o.warps_per_block,
        "max_warps_per_sm": o.max_warps_per_sm,
        "limiter": o.limiter.value,
        "by_registers": o.by_registers,
        "by_shared_memory": o.by_shared_memory,
        "by_warps": o.by_warps,
        "by_blocks": o.by_blocks,
    }


def from_dict(raw: Any, where: str = "kernels") -> CompiledCase:
    """ValueError naming `where` and the field for anything that is not a true record."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: must be an object")
    kernels = raw.get("kernels", [])
    if not isinstance(kernels, list) or len(kernels) > MAX_KERNELS:
        raise ValueError(f"{where}.kernels: must be a list of at most {MAX_KERNELS} kernels")
    versions = raw.get("versions", {})
    if not isinstance(versions, dict):
        raise ValueError(f"{where}.versions: must map libraries to versions")
    notes = raw.get("notes", [])
    if not isinstance(notes, list):
        raise ValueError(f"{where}.notes: must be a list")
    return CompiledCase(
        kernels=tuple(_kernel(k, f"{where}.kernels[{i}]") for i, k in enumerate(kernels)),
        inputs_sha=_text(raw.get("inputs_sha", ""), f"{where}.inputs_sha"),
        inputs=_text(raw.get("inputs", ""), f"{where}.inputs"),
        arch=_text(raw.get("arch", ""), f"{where}.arch"),
        versions=tuple((_text(k, f"{where}.versions"), _text(v, f"{where}.versions.{k}")) for k, v in versions.items()),
        notes=tuple(_text(n, f"{where}.notes") for n in notes),
    )


def _kernel(raw: Any, where: str) -> KernelFacts:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: must be an object")
    try:
        source = KernelSource(raw.get("source"))
    except ValueError as err:
        raise ValueError(f"{where}.source: not one of {', '.join(s.value for s in KernelSource)}") from err
    name = _text(raw.get("name"), f"{where}.name")
    if not name:
        raise ValueError(f"{where}.name: empty")
    launches = _int(raw.get("launches", 1), f"{where}.launches")
    if launches is None or launches < 1:
        raise ValueError(f"{where}.launches: must be an integer >= 1")
    return KernelFacts(
        name=name,
        source=source,
        **{f: _int(raw.get(f), f"{where}.{f}") for f in _INTS},
        block=_dims(raw.get("block"), f"{where}.block"),
        grid=_dims(raw.get("grid"), f"{where}.grid"),
        occupancy=_occupancy(raw.get("occupancy"), f"{where}.occupancy"),
        sass_sha=_text(raw.get("sass_sha", ""), f"{where}.sass_sha"),
        launches=launches,
        key=_text(raw.get("key") or name, f"{where}.key"),
        detail=_text(raw.get("detail", ""), f"{where}.detail"),
    )


def _occupancy(raw: Any, where: str) -> Occupancy | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: must be an object or null")
    try:
        limiter = Limiter(raw.get("limiter"))
    except ValueError as err:
        raise ValueError(f"{where}.limiter: not one of {', '.join(x.value for x in Limiter)}") from err
    names = _OCCUPANCY_INTS
    found = {f: _int(raw.get(f), f"{where}.{f}") for f in names}
    values = {k: v for k, v in found.items() if v is not None}
    if len(values) != len(names):
        raise ValueError(f"{where}: needs every one of {', '.join(names)}")
    occ = Occupancy(limiter=limiter, **values)
    limits = (occ.by_registers, occ.by_shared_memory, occ.by_warps, occ.by_blocks)
    if occ.warps_per_block < 1 or occ.max_warps_per_sm < 1 or occ.blocks_per_sm != min(limits):
        raise ValueError(f"{where}: blocks_per_sm must be the least of its limits, warps at least 1")
    if occ.active_warps > occ.max_warps_per_sm:
        raise ValueError(f"{where}: more active warps ({occ.active_warps}) than the SM has ({occ.max_warps_per_sm})")
    return occ


def _int(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
        raise ValueError(f"{where}: must be an integer in [0, 2**63) or null, got {value!r}")
    return value


def _dims(value: Any, where: str) -> tuple[int, int, int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 3:
        raise ValueError(f"{where}: must be [x, y, z] or null")
    dims = [_int(v, where) for v in value]
    if any(d is None or d < 1 for d in dims):
        raise ValueError(f"{where}: every dimension must be an integer >= 1")
    return (int(dims[0] or 1), int(dims[1] or 1), int(dims[2] or 1))


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where}: must be text")
    if has_control(value):
        raise ValueError(f"{where}: holds a control character")
    return value
