"""Which ranges enclose a point-in-time event, by sort and sweep (O(n log n)).

Kernels are attributed to the NVTX push/pop ranges (nsys) or `record_function` annotations (torch
traces) that were open on the launching thread when the launch call ran. The first version asked SQLite
for every launch "which ranges of this thread enclose it", scanning all of the thread's ranges per
launch: quadratic, 84% of a million-kernel analysis. Here each thread's ranges and calls are sorted once
and swept together with a stack of open ranges.

Semantics kept exactly: a range encloses a call when range.start <= call.start and range.end >=
call.end, on the same thread; results are ordered outermost first (by range start). Push/pop ranges nest
on a thread, so the stack is exact; for ranges that overlap without nesting (only malformed input has
them) every candidate is still checked against both conditions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    thread: Hashable
    start: int
    end: int


def enclosing(calls: Sequence[Span], ranges: Sequence[Span]) -> list[tuple[int, ...]]:
    """For each call, the indices of the ranges that enclose it, outermost (earliest start) first."""
    out: list[tuple[int, ...]] = [()] * len(calls)
    calls_by_thread: dict[Hashable, list[int]] = defaultdict(list)
    for i, c in enumerate(calls):
        calls_by_thread[c.thread].append(i)
    ranges_by_thread: dict[Hashable, list[int]] = defaultdict(list)
    for j, r in enumerate(ranges):
        ranges_by_thread[r.thread].append(j)
    for thread, call_ids in calls_by_thread.items():
        range_ids = ranges_by_thread.get(thread)
        if range_ids:
            _sweep(calls, call_ids, ranges, range_ids, out)
    return out


def _sweep(
    calls: Sequence[Span], call_ids: list[int], ranges: Sequence[Span], range_ids: list[int], out: list[tuple[int, ...]]
) -> None:
    call_ids = sorted(call_ids, key=lambda i: calls[i].start)
    # ties on start: the longer range opened first (it is the outer one), then input order
    range_ids = sorted(range_ids, key=lambda j: (ranges[j].start, -ranges[j].end, j))
    stack: list[int] = []
    k = 0
    for i in call_ids:
        c = calls[i]
        while k < len(range_ids) and ranges[range_ids[k]].start <= c.start:
            stack.append(range_ids[k])
            k += 1
        while stack and ranges[stack[-1]].end < c.start:  # closed before this call: never encloses a later one
            stack.pop()
        if stack:  # pushed in (start, -end) order, so already outermost first
            found = tuple(j for j in stack if ranges[j].end >= c.end)
            if found:
                out[i] = found
