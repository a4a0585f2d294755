"""Which cases pair up across the two trees, and in which order the sides measure in each round (pure).

Order: rounds come in pairs; the first of a pair is a random permutation of the sides, the second its
reverse (ABBA, BAAB, ...). Each side is first as often as last, so a drift within a round (the GPU
warming, a clock stepping down) cannot favour one side, and the random start keeps any periodic
disturbance from lining up with a side.

Pairing: both workers run their perf tests in collection order (no reordering plugin), each stopping at
every case it measures. A case both sides stop at is measured side by side; a test one tree does not
have is new (head) or removed (base); within a test, cases are matched in order.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from perfgate.ab.protocol import CaseReady, Collected, End, Event, Side, TestDone


def round_orders(sides: Sequence[Side], rounds: int, rng: random.Random) -> list[tuple[Side, ...]]:
    """The order of the sides in each of `rounds` rounds: random, then its reverse, and so on."""
    orders: list[tuple[Side, ...]] = []
    while len(orders) < rounds:
        first = list(sides)
        rng.shuffle(first)
        orders += [tuple(first), tuple(reversed(first))]
    return orders[:rounds]


class Step(enum.Enum):
    PAIR = "pair"  # both sides wait at the same case: measure it side by side
    HEAD_ONLY = "head only"  # the head waits at a case the base does not have here: new
    BASE_ONLY = "base only"  # the base waits at a case the head does not have here: removed
    ADVANCE_HEAD = "advance head"  # the head is behind (a test event): let it go on
    ADVANCE_BASE = "advance base"
    ADVANCE_BOTH = "advance both"
    FINISHED = "finished"  # both ended


@dataclass(frozen=True)
class Positions:
    """What each tree collected (its perf tests in order) and, when known, the base's cases of each test."""

    head_order: Mapping[str, int]  # node id -> index in the head's collection
    base_nodeids: frozenset[str]
    base_cases: Mapping[str, Sequence[str]] | None = None  # node id -> case ids in order (a cached run)


def next_step(base: Event, head: Event, where: Positions) -> Step:
    """What the coordinator does with the two events the workers wait at."""
    if isinstance(base, End) and isinstance(head, End):
        return Step.FINISHED
    if isinstance(head, CaseReady) and head.nodeid not in where.base_nodeids:
        return Step.HEAD_ONLY
    if isinstance(base, CaseReady) and base.nodeid not in where.head_order:
        return Step.BASE_ONLY
    if isinstance(base, End) or isinstance(head, End):
        return _one_ended(base, head)
    if isinstance(base, TestDone) and isinstance(head, TestDone):
        return Step.ADVANCE_BOTH
    assert not isinstance(base, Collected) and not isinstance(head, Collected)
    return _common(base, head, where)


def _one_ended(base: Event, head: Event) -> Step:
    """One tree has run all its tests: whatever the other still waits at is its own."""
    if isinstance(base, End):
        return Step.HEAD_ONLY if isinstance(head, CaseReady) else Step.ADVANCE_HEAD
    return Step.BASE_ONLY if isinstance(base, CaseReady) else Step.ADVANCE_BASE


def _common(base: CaseReady | TestDone, head: CaseReady | TestDone, where: Positions) -> Step:
    b_at, h_at = _index(base, where), _index(head, where)
    if b_at != h_at:  # one side already left the other's test: the one still in an earlier test goes on
        if b_at < h_at:
            return Step.BASE_ONLY if isinstance(base, CaseReady) else Step.ADVANCE_BASE
        return Step.HEAD_ONLY if isinstance(head, CaseReady) else Step.ADVANCE_HEAD
    if isinstance(base, CaseReady) and isinstance(head, CaseReady):
        if base.case_id == head.case_id:
            return Step.PAIR
        later = (where.base_cases or {}).get(base.nodeid, ())
        if (
            head.case_id in later
            and base.case_id in later
            and list(later).index(head.case_id) > list(later).index(base.case_id)
        ):
            return Step.BASE_ONLY  # the base's case comes before the head's there: the head removed it
        return Step.HEAD_ONLY
    # same test: one side still has a case to measure, the other has finished the test
    return Step.HEAD_ONLY if isinstance(head, CaseReady) else Step.BASE_ONLY


def _index(event: CaseReady | TestDone, where: Positions) -> int:
    return where.head_order.get(event.nodeid, -1)
