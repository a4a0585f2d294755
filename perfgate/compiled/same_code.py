"""A/B mode's "same code?": whether base and head run the same compiled code on the same inputs, so the case
need not be measured (reported `unchanged (same code)`).

Same means, for one call of the case on each side: the same kernels launched in the same order, the same
number of times, each with identical normalised SASS (compiled/cubin.py), launch configuration (grid, block,
dynamic shared memory, warps, stages) and, for a library's operators, the same operator on the same inputs;
the case's arguments identical (every tensor's dtype, shape, strides, offset; every scalar); the same
libraries (torch, Triton, CUDA, the driver, cuDNN, cuBLAS) and GPU architecture.

What it does not cover, so a case is measured whenever any of it may differ: host code between launches (a
case whose time includes Python work, or a launch-bound kernel, can change with identical kernels); the
driver's and the GPU's state (clocks, power), which the rounds would cancel but this check cannot see; kernels
a record could not read (its notes). A record with any note is never "same code".
"""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.compiled.records import CompiledCase, KernelFacts, KernelSource


@dataclass(frozen=True)
class SameCode:
    same: bool
    why: str  # the evidence when same; the first difference otherwise


def same_code(base: CompiledCase | None, head: CompiledCase | None) -> SameCode:
    if base is None or head is None:
        return SameCode(False, "the compiled kernels were not recorded on both sides")
    difference = _record_difference(base, head) or next(
        (d for b, h in zip(base.kernels, head.kernels) if (d := _difference(b, h))), ""
    )
    if difference:
        return SameCode(False, difference)
    coded = sum(k.source is not KernelSource.LIBRARY for k in head.kernels)
    library = len(head.kernels) - coded
    what = f"{coded} kernel(s) with identical SASS and launches"
    what += f", {library} library operator(s)" if library else ""
    return SameCode(True, f"{what} on identical inputs; same {', '.join(k for k, _ in head.versions)}")


def _record_difference(base: CompiledCase, head: CompiledCase) -> str:
    """What differs between the two records as a whole ("" when nothing)."""
    incomplete = next(
        (
            f"the {side}'s record is incomplete ({r.notes[0]})"
            for side, r in (("base", base), ("head", head))
            if r.notes
        ),
        "",
    )
    checks = (
        (incomplete, True),
        (f"compiled for {base.arch} and {head.arch}", base.arch != head.arch),
        (f"libraries differ: {_versions_diff(base, head)}", base.versions != head.versions),
        (f"inputs differ: {base.inputs or '-'} / {head.inputs or '-'}", base.inputs_sha != head.inputs_sha),
        ("no kernel launch was seen: nothing shows the code is the same", not head.kernels),
        (
            f"{len(base.kernels)} kernel launch configurations in the base, {len(head.kernels)} in the head",
            len(base.kernels) != len(head.kernels),
        ),
    )
    return next((text for text, differs in checks if differs and text), "")


def _difference(b: KernelFacts, h: KernelFacts) -> str:
    if b.source is not h.source:
        return f"{h.name}: a {h.source.value} kernel where the base launches a {b.source.value} one ({b.name})"
    if h.source is KernelSource.LIBRARY:
        if (b.name, b.detail) != (h.name, h.detail):
            return f"operator {b.name}({b.detail}) in the base, {h.name}({h.detail}) in the head"
    elif not h.sass_sha or not b.sass_sha:
        return f"{h.name}: no SASS to compare"
    elif b.sass_sha != h.sass_sha:
        return f"{h.name}: its SASS differs ({b.sass_sha} / {h.sass_sha})"
    for label, x, y in (
        ("launches per call", b.launches, h.launches),
        ("grid", b.grid, h.grid),
        ("block", b.block, h.block),
        ("dynamic shared memory", b.dynamic_shared_bytes, h.dynamic_shared_bytes),
        ("warps", b.num_warps, h.num_warps),
        ("stages", b.num_stages, h.num_stages),
    ):
        if x != y:
            return f"{h.name}: {label} {x} / {y}"
    return ""


def _versions_diff(base: CompiledCase, head: CompiledCase) -> str:
    b, h = dict(base.versions), dict(head.versions)
    return ", ".join(
        f"{k} {b.get(k, '-')} / {h.get(k, '-')}" for k in sorted(b.keys() | h.keys()) if b.get(k) != h.get(k)
    )
