"""Round order and case pairing in A/B mode (perfgate/ab/schedule.py): pure functions."""

from __future__ import annotations

import random
from collections import Counter

from perfgate.ab.protocol import CaseReady, End, Side, TestDone
from perfgate.ab.schedule import Positions, Step, next_step, round_orders

B, H, AA = Side.BASE, Side.HEAD, Side.AA


def test_every_round_measures_every_side_once_and_pairs_of_rounds_mirror_each_other():
    orders = round_orders([B, H, AA], 10, random.Random(4))
    assert all(sorted(o) == sorted([B, H, AA]) for o in orders)
    assert all(orders[i + 1] == tuple(reversed(orders[i])) for i in range(0, 10, 2))  # ABBA


def test_each_side_goes_first_as_often_as_last():
    orders = round_orders([B, H], 40, random.Random(1))
    first = Counter(o[0] for o in orders)
    assert first[B] == first[H] == 20


def test_which_side_starts_a_pair_of_rounds_is_random_and_seeded():
    starts = [round_orders([B, H], 2, random.Random(seed))[0][0] for seed in range(40)]
    assert 10 <= starts.count(B) <= 30  # neither side always first
    assert round_orders([B, H], 8, random.Random(9)) == round_orders([B, H], 8, random.Random(9))


def _where(head: list[str], base: list[str], base_cases: dict[str, list[str]] | None = None) -> Positions:
    return Positions(
        {n: i for i, n in enumerate(head)},
        frozenset(base),
        {k: tuple(v) for k, v in base_cases.items()} if base_cases else None,
    )


def test_the_same_case_on_both_sides_is_measured_side_by_side():
    where = _where(["t::a"], ["t::a"])
    assert next_step(CaseReady("t::a", "t::a"), CaseReady("t::a", "t::a"), where) is Step.PAIR


def test_a_test_only_the_head_has_is_new_and_one_only_the_base_has_is_removed():
    where = _where(["t::a", "t::new"], ["t::a", "t::old"])
    assert next_step(CaseReady("t::a", "t::a"), CaseReady("t::new", "t::new"), where) is Step.HEAD_ONLY
    assert next_step(CaseReady("t::old", "t::old"), TestDone("t::a"), where) is Step.BASE_ONLY


def test_a_case_the_other_side_has_already_passed_is_one_sided():
    where = _where(["t::a", "t::b"], ["t::a", "t::b"])
    # the head is already at test b: the base's case in test a has no partner any more
    assert next_step(CaseReady("t::a::x", "t::a"), CaseReady("t::b", "t::b"), where) is Step.BASE_ONLY
    assert next_step(TestDone("t::a"), CaseReady("t::b", "t::b"), where) is Step.ADVANCE_BASE
    assert next_step(TestDone("t::a"), TestDone("t::a"), where) is Step.ADVANCE_BOTH


def test_within_a_test_a_named_case_added_in_the_head_is_new():
    where = _where(["t::a"], ["t::a"])
    assert next_step(CaseReady("t::a::bf16", "t::a"), CaseReady("t::a::fp8", "t::a"), where) is Step.HEAD_ONLY


def test_within_a_test_a_case_the_head_removed_is_known_from_the_base_s_cached_cases():
    where = _where(["t::a"], ["t::a"], {"t::a": ["t::a::fp16", "t::a::bf16"]})
    assert next_step(CaseReady("t::a::fp16", "t::a"), CaseReady("t::a::bf16", "t::a"), where) is Step.BASE_ONLY


def test_when_one_tree_has_ended_the_other_finishes_alone():
    where = _where(["t::a"], ["t::a"])
    assert next_step(End(0), CaseReady("t::a", "t::a"), where) is Step.HEAD_ONLY
    assert next_step(CaseReady("t::a", "t::a"), End(0), where) is Step.BASE_ONLY
    assert next_step(TestDone("t::a"), End(0), where) is Step.ADVANCE_BASE
    assert next_step(End(0), End(1), where) is Step.FINISHED
