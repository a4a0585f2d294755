"""The summary's table of compiled kernels: each kernel every case launched, as compiled (perfgate/compiled/),
and what could not be read. Library operators are listed by name after a case's own kernels."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from perfgate.compiled.occupancy import pct_text
from perfgate.compiled.records import KernelFacts, KernelSource
from perfgate.model import CaseResult
from perfgate.report.format import case_label, kernel_label

HEADER = (
    "| case | kernel | registers | spills (store / load) | shared (static + dynamic) | block x grid | "
    "warps / stages | occupancy (limit) | SASS |",
    "|---|---|---:|---:|---:|---:|---:|---:|---|",
)


def compiled_section(
    results: Sequence[CaseResult], top_n: int, escape: Callable[[str], str], code: Callable[[str], str]
) -> list[str]:
    cases = [(r.case_id, r.compiled) for r in results if r.compiled is not None]
    if not cases:
        return []
    rows = [(cid, k) for cid, c in cases for k in c.kernels if k.source is not KernelSource.LIBRARY]
    ops = sorted({k.name for _, c in cases for k in c.kernels if k.source is KernelSource.LIBRARY})
    arch = next((c.arch for _, c in cases if c.arch), "")
    title = f"### Compiled kernels ({len(rows)} in {len(cases)} case(s){', ' + arch if arch else ''})"
    out = [title, "", *HEADER]
    out += [_row(cid, k, code) for cid, k in rows[:top_n]]
    if len(rows) > top_n:
        out.append(f"| … and {len(rows) - top_n:,} more |" + " |" * 8)
    if ops:
        shown = ", ".join(f"`{code(n)}`" for n in ops[:top_n])
        out += ["", f"Library operators (known by name, inputs and library version): {shown}"]
    notes = [(cid, n) for cid, c in cases for n in c.notes]
    out += [f"- ℹ️ `{code(case_label(cid, 60))}`: {escape(n)}" for cid, n in notes[:top_n]]
    return out + [""]


def _row(case_id: str, k: KernelFacts, code: Callable[[str], str]) -> str:
    spills = (
        "-"
        if k.spill_bytes is None
        else ("0" if not k.spill_bytes else f"{k.spill_store_bytes} / {k.spill_load_bytes} B")
    )
    shared = "-" if k.static_shared_bytes is None else f"{k.static_shared_bytes:,} + {_n(k.dynamic_shared_bytes)} B"
    launch = "-" if k.block is None else f"{_dims(k.block)} x {_dims(k.grid)}"
    occ = "-" if k.occupancy is None else f"{pct_text(k.occupancy.pct)} ({k.occupancy.limiter.value})"
    warps = f"{_n(k.num_warps)} / {_n(k.num_stages)}"
    times = f" x{k.launches}" if k.launches > 1 else ""
    return (
        f"| `{code(case_label(case_id, 50))}` | `{code(kernel_label(k.key or k.name, 40))}`{times} | "
        f"{_n(k.registers_per_thread)} | {spills} | {shared} | {launch} | {warps} | {occ} | "
        f"`{k.sass_sha or '-'}` |"
    )


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _dims(dims: tuple[int, int, int] | None) -> str:
    if dims is None:
        return "?"
    shown = list(dims)
    while len(shown) > 1 and shown[-1] == 1:
        shown.pop()
    return "x".join(map(str, shown)) if len(shown) > 1 else str(shown[0])
