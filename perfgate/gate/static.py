"""The static gate: a case's compiled kernels against the baseline's (or the base's, in A/B mode), exactly.

No statistics: registers, spills and shared memory are what the compiler wrote, the theoretical occupancy what
they allow on this GPU. Per kernel (matched by name, compiled/records.py `key`), for each of four metrics a
policy (fail, warn, off: config/options.py):

- registers per thread up by more than `static_registers_margin`;
- spills: any spill traffic that was not there, or more of it (bytes of local stores + loads in the SASS);
- theoretical occupancy down a step;
- shared memory per block (static + dynamic) up.

Each row says why in words: "registers 128 -> 168 per thread: occupancy 50 % -> 37.5 % (the register file
limits it to 3 blocks of 256 threads per SM)". A kernel launched on one side only (another kernel, a
changed specialisation) cannot be compared: one row names it, not gated. docs/compiled-kernels.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.compiled.occupancy import limits_for, pct_text, shared_per_block, why
from perfgate.compiled.records import CompiledCase, KernelFacts, KernelSource, StaticPolicy
from perfgate.config.settings import Settings
from perfgate.metrics import STATIC_LAUNCHED, STATIC_OCCUPANCY, STATIC_REGISTERS, STATIC_SHARED, STATIC_SPILLS
from perfgate.model import Comparison, Direction, Verdict
from perfgate.stats import percent_change

REGISTERS, SPILLS, OCCUPANCY, SHARED = STATIC_REGISTERS, STATIC_SPILLS, STATIC_OCCUPANCY, STATIC_SHARED
LAUNCHED = STATIC_LAUNCHED
STATIC_METRICS = (REGISTERS, SPILLS, OCCUPANCY, SHARED, LAUNCHED)


@dataclass(frozen=True)
class StaticRule:
    registers: StaticPolicy = StaticPolicy.FAIL
    registers_margin: int = 16
    spills: StaticPolicy = StaticPolicy.FAIL
    occupancy: StaticPolicy = StaticPolicy.FAIL
    shared_memory: StaticPolicy = StaticPolicy.WARN


def static_rule(settings: Settings) -> StaticRule:
    return StaticRule(
        registers=settings.static_registers,
        registers_margin=settings.static_registers_margin,
        spills=settings.static_spills,
        occupancy=settings.static_occupancy,
        shared_memory=settings.static_shared_memory,
    )


def is_static(metric: str) -> bool:
    return metric in STATIC_METRICS


def compare_compiled(
    case_id: str, before: CompiledCase | None, after: CompiledCase | None, rule: StaticRule
) -> list[Comparison]:
    """The rows for what changed between two records of one case's kernels ([] when either side has none or
    they were compiled for different GPUs)."""
    if before is None or after is None or before.arch != after.arch:
        return []
    old = {k.key: k for k in before.kernels if k.source is not KernelSource.LIBRARY}
    new = {k.key: k for k in after.kernels if k.source is not KernelSource.LIBRARY}
    rows = [row for key in new if key in old for row in _kernel_rows(case_id, old[key], new[key], rule, after.arch)]
    added, gone = [k for k in new if k not in old], [k for k in old if k not in new]
    if added or gone:
        rows.append(_launched_row(case_id, added, gone))
    return rows


def _kernel_rows(case_id: str, b: KernelFacts, a: KernelFacts, rule: StaticRule, arch: str) -> list[Comparison]:
    rows = []
    if rule.registers is not StaticPolicy.OFF and _moved(b.registers_per_thread, a.registers_per_thread):
        assert b.registers_per_thread is not None and a.registers_per_thread is not None
        worse = a.registers_per_thread - b.registers_per_thread > rule.registers_margin
        note = f"registers {b.registers_per_thread} -> {a.registers_per_thread} per thread"
        if a.registers_per_thread > b.registers_per_thread and not worse:
            note += f" (within the margin of {rule.registers_margin})"
        rows.append(
            _row(
                case_id,
                REGISTERS,
                "register/thread",
                b,
                a,
                _verdict(worse, a, b, REGISTERS),
                rule.registers,
                note + _occupancy_words(b, a, arch),
            )
        )
    if rule.spills is not StaticPolicy.OFF and _moved(b.spill_bytes, a.spill_bytes):
        assert b.spill_bytes is not None and a.spill_bytes is not None
        note = (
            f"spills {b.spill_bytes} -> {a.spill_bytes} bytes of local-memory traffic per thread's code (stores "
            f"{a.spill_store_bytes}, loads {a.spill_load_bytes}) at {a.registers_per_thread} registers"
        )
        if b.spill_bytes == 0:
            note += ": the kernel spills where it did not"
        rows.append(
            _row(
                case_id, SPILLS, "byte", b, a, _verdict(a.spill_bytes > b.spill_bytes, a, b, SPILLS), rule.spills, note
            )
        )
    if (
        rule.occupancy is not StaticPolicy.OFF
        and b.occupancy
        and a.occupancy
        and _moved(b.occupancy.pct, a.occupancy.pct)
    ):
        note = f"occupancy {pct_text(b.occupancy.pct)} -> {pct_text(a.occupancy.pct)}: " + _why(a, arch)
        note += f" (was: {_why(b, arch)})" + _cause(b, a)
        rows.append(
            _row(
                case_id,
                OCCUPANCY,
                "%",
                b,
                a,
                _verdict(a.occupancy.pct < b.occupancy.pct, a, b, OCCUPANCY),
                rule.occupancy,
                note,
            )
        )
    sb, sa = _shared(b), _shared(a)
    if rule.shared_memory is not StaticPolicy.OFF and _moved(sb, sa):
        assert sb is not None and sa is not None
        note = f"shared memory {sb:,} -> {sa:,} bytes per block" + _occupancy_words(b, a, arch)
        rows.append(
            _row(case_id, SHARED, "byte/block", b, a, _verdict(sa > sb, a, b, SHARED), rule.shared_memory, note)
        )
    return rows


def _moved(before: float | None, after: float | None) -> bool:
    return before is not None and after is not None and before != after


def _shared(k: KernelFacts) -> int | None:
    if k.static_shared_bytes is None or k.dynamic_shared_bytes is None:
        return None
    return k.static_shared_bytes + k.dynamic_shared_bytes


def _verdict(worse: bool, a: KernelFacts, b: KernelFacts, metric: str) -> Verdict:
    if worse:
        return Verdict.REGRESSED
    better = {
        REGISTERS: (a.registers_per_thread or 0) < (b.registers_per_thread or 0),
        SPILLS: (a.spill_bytes or 0) < (b.spill_bytes or 0),
        OCCUPANCY: bool(a.occupancy and b.occupancy and a.occupancy.pct > b.occupancy.pct),
        SHARED: (_shared(a) or 0) < (_shared(b) or 0),
    }[metric]
    return Verdict.IMPROVED if better else Verdict.UNCHANGED


def _value(metric: str, k: KernelFacts) -> float | None:
    if metric == REGISTERS:
        return k.registers_per_thread
    if metric == SPILLS:
        return k.spill_bytes
    if metric == OCCUPANCY:
        return k.occupancy.pct if k.occupancy else None
    return _shared(k)


def _row(
    case_id: str,
    metric: str,
    unit: str,
    b: KernelFacts,
    a: KernelFacts,
    verdict: Verdict,
    policy: StaticPolicy,
    note: str,
) -> Comparison:
    """A regression fails under `fail`; under `warn` it is a warning (inconclusive, never failing)."""
    gated = policy is StaticPolicy.FAIL
    if verdict is Verdict.REGRESSED and not gated:
        verdict, note = Verdict.INCONCLUSIVE, f"warn: {note}"
    before, after = _value(metric, b), _value(metric, a)
    return Comparison(
        case_id=case_id,
        metric=metric,
        unit=unit,
        direction=Direction.HIGHER if metric == OCCUPANCY else Direction.LOWER,
        verdict=verdict,
        kernel=a.key,
        baseline=before,
        current=after,
        change_pct=percent_change(before, after) if before is not None and after is not None else None,
        note=note,
        gated=gated,
    )


def _launched_row(case_id: str, added: list[str], gone: list[str]) -> Comparison:
    parts = []
    if added:
        parts.append(f"now launches {', '.join(added)}")
    if gone:
        parts.append(f"no longer {', '.join(gone)}")
    return Comparison(
        case_id=case_id,
        metric=LAUNCHED,
        unit="",
        direction=Direction.LOWER,
        verdict=Verdict.INCONCLUSIVE,
        kernel=", ".join(added or gone),
        note="kernels changed: "
        + "; ".join(parts)
        + " (other kernels: their registers and occupancy are not compared)",
        gated=False,
    )


def _why(k: KernelFacts, arch: str) -> str:
    assert k.occupancy is not None
    limits = limits_for(arch)
    threads = k.threads_per_block or k.occupancy.warps_per_block * 32
    shared = (
        shared_per_block(limits, k.static_shared_bytes or 0, k.dynamic_shared_bytes or 0)
        if limits is not None
        else None
    )
    return why(k.occupancy, threads, shared)


def _occupancy_words(b: KernelFacts, a: KernelFacts, arch: str) -> str:
    if b.occupancy is None or a.occupancy is None:
        return ""
    if b.occupancy.pct == a.occupancy.pct:
        return f": occupancy unchanged at {pct_text(a.occupancy.pct)} ({_why(a, arch)})"
    return f": occupancy {pct_text(b.occupancy.pct)} -> {pct_text(a.occupancy.pct)} ({_why(a, arch)})"


def _cause(b: KernelFacts, a: KernelFacts) -> str:
    """Which input of the calculation moved."""
    moved = []
    if _moved(b.registers_per_thread, a.registers_per_thread):
        moved.append(f"registers {b.registers_per_thread} -> {a.registers_per_thread}")
    if _moved(_shared(b), _shared(a)):
        moved.append(f"shared memory {_shared(b):,} -> {_shared(a):,} bytes")
    if _moved(b.threads_per_block, a.threads_per_block):
        moved.append(f"block {b.threads_per_block} -> {a.threads_per_block} threads")
    return f"; moved: {', '.join(moved)}" if moved else ""
