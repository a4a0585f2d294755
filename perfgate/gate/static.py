"""The static gate: a case's compiled kernels against the baseline's (or the base's, in A/B mode), exactly.

No statistics: registers, spills and shared memory are what the compiler wrote, the theoretical occupancy what
they allow on this GPU. Per kernel (matched by name, compiled/records.py `key`), for each of four metrics a
policy (fail, warn, off: config/options.py):

- registers per thread up by more than `static_registers_margin`;
- spills: any spill traffic that was not there, or more of it (bytes of local stores + loads in the SASS);
- theoretical occupancy down a step;
- shared memory per block (static + dynamic) up.

Each row says one thing, in words, as "what changed: why it matters" (`static_headline` is the part before the
first ": "). The occupancy row explains the occupancy: the inputs whose change moved it (each one's own effect,
the others held) and what limits it now and before: "occupancy 50 % -> 37.5 % from registers 128 -> 168 per
thread: the register file limits it to 3 blocks of 256 threads per SM (was: 4 blocks ...)". A registers or
shared-memory row names its own change only; it carries the occupancy it caused where no occupancy row is
shown (that policy off), and never an occupancy it did not cause. A kernel launched on one side only (another
kernel, a changed specialisation) cannot be compared: one row names it, not gated. docs/compiled-kernels.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.compiled.occupancy import limits_for, pct_text, shared_per_block, theoretical, why
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
    causes = _causes(b, a, arch)
    occupancy_row = rule.occupancy is not StaticPolicy.OFF and _occupancy_moved(b, a)

    def caused(label: str) -> str:  # the occupancy a resource moved, said on its row only where no other row does
        return "" if occupancy_row or label not in causes else _occupancy_words(b, a, arch)

    rows = []
    if rule.registers is not StaticPolicy.OFF and _moved(b.registers_per_thread, a.registers_per_thread):
        assert b.registers_per_thread is not None and a.registers_per_thread is not None
        worse = a.registers_per_thread - b.registers_per_thread > rule.registers_margin
        note = f"registers {b.registers_per_thread} -> {a.registers_per_thread} per thread"
        if a.registers_per_thread > b.registers_per_thread and not worse:
            note += f" (within the margin of {rule.registers_margin})"
        verdict = _verdict(worse, a, b, REGISTERS)
        rows.append(_row(case_id, REGISTERS, "register/thread", b, a, verdict, rule.registers, note + caused(REGS)))
    if rule.spills is not StaticPolicy.OFF and _moved(b.spill_bytes, a.spill_bytes):
        assert b.spill_bytes is not None and a.spill_bytes is not None
        note = (
            f"spills {b.spill_bytes:,} -> {a.spill_bytes:,} bytes: local-memory stores {a.spill_store_bytes:,} + "
            f"loads {a.spill_load_bytes:,} bytes in one thread's code, at {a.registers_per_thread} registers"
        )
        if b.spill_bytes == 0:
            note += "; the kernel spills where it did not"
        verdict = _verdict(a.spill_bytes > b.spill_bytes, a, b, SPILLS)
        rows.append(_row(case_id, SPILLS, "byte", b, a, verdict, rule.spills, note))
    if occupancy_row:
        assert b.occupancy is not None and a.occupancy is not None
        note = f"occupancy {pct_text(b.occupancy.pct)} -> {pct_text(a.occupancy.pct)}"
        note += f" from {', '.join(causes.values())}" if causes else ""
        note += f": {_why(a, arch)} (was: {_why(b, arch)})"
        verdict = _verdict(a.occupancy.pct < b.occupancy.pct, a, b, OCCUPANCY)
        rows.append(_row(case_id, OCCUPANCY, "%", b, a, verdict, rule.occupancy, note))
    sb, sa = _shared(b), _shared(a)
    if rule.shared_memory is not StaticPolicy.OFF and _moved(sb, sa):
        assert sb is not None and sa is not None
        note = f"shared memory {sb:,} -> {sa:,} bytes per block" + caused(SHARED_MEMORY)
        verdict = _verdict(sa > sb, a, b, SHARED)
        rows.append(_row(case_id, SHARED, "byte/block", b, a, verdict, rule.shared_memory, note))
    return rows


def static_headline(note: str) -> str:
    """What a static row says changed, without why (its note up to the first ": "; a warning's mark dropped)."""
    return note.removeprefix("warn: ").split(": ", 1)[0]


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
    return Comparison.words(
        case_id,
        LAUNCHED,
        "kernels changed: " + "; ".join(parts) + " (other kernels: their registers and occupancy are not compared)",
        kernel=", ".join(added or gone),
        verdict=Verdict.INCONCLUSIVE,
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


REGS, SHARED_MEMORY, BLOCK = "registers", "shared memory", "block"


def _occupancy_moved(b: KernelFacts, a: KernelFacts) -> bool:
    return b.occupancy is not None and a.occupancy is not None and b.occupancy.pct != a.occupancy.pct


def _occupancy_words(b: KernelFacts, a: KernelFacts, arch: str) -> str:
    assert b.occupancy is not None and a.occupancy is not None
    return f": occupancy {pct_text(b.occupancy.pct)} -> {pct_text(a.occupancy.pct)} ({_why(a, arch)})"


def _causes(b: KernelFacts, a: KernelFacts, arch: str) -> dict[str, str]:
    """Which inputs of the occupancy calculation moved it: each one changed alone (the others as before) that
    moves the occupancy the same way; all the moved inputs together when none does alone. {} when the
    occupancy did not move or cannot be recomputed."""
    limits = limits_for(arch)
    if limits is None or not _occupancy_moved(b, a):
        return {}
    assert b.occupancy is not None and a.occupancy is not None
    before = (b.registers_per_thread, _shared(b), b.threads_per_block)
    after = (a.registers_per_thread, _shared(a), a.threads_per_block)
    if None in before or None in after:
        return {}
    words = {
        REGS: f"registers {before[0]} -> {after[0]} per thread",
        SHARED_MEMORY: f"shared memory {before[1]:,} -> {after[1]:,} bytes per block",
        BLOCK: f"block {before[2]} -> {after[2]} threads",
    }
    moved = [i for i in range(3) if before[i] != after[i]]
    down = a.occupancy.pct < b.occupancy.pct
    alone = {}
    for i in moved:
        inputs = [after[j] if j == i else before[j] for j in range(3)]
        try:
            pct = theoretical(limits, int(inputs[0] or 0), int(inputs[2] or 0), 0, int(inputs[1] or 0)).pct
        except ValueError:
            continue
        if (pct < b.occupancy.pct) if down else (pct > b.occupancy.pct):
            alone[list(words)[i]] = words[list(words)[i]]
    return alone or {list(words)[i]: words[list(words)[i]] for i in moved}
