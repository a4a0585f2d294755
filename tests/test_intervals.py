"""The sort-and-sweep interval join against the brute-force definition, on arbitrary (also malformed)
ranges: same result for every call, outermost first."""

from hypothesis import given, settings
from hypothesis import strategies as st

from perfgate.parse.intervals import Span, enclosing

spans = st.builds(lambda t, s, d: Span(t, s, s + d), st.integers(0, 2), st.integers(0, 60), st.integers(0, 30))


def brute_force(calls, ranges):
    out = []
    for c in calls:
        found = [j for j, r in enumerate(ranges) if r.thread == c.thread and r.start <= c.start and r.end >= c.end]
        out.append(tuple(sorted(found, key=lambda j: (ranges[j].start, -ranges[j].end, j))))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(spans, max_size=25), st.lists(spans, max_size=25))
def test_sweep_equals_brute_force_on_any_ranges(calls, ranges):
    assert enclosing(calls, ranges) == brute_force(calls, ranges)


def test_nested_push_pop_ranges_give_the_stack_outermost_first():
    ranges = [Span(1, 0, 100), Span(1, 10, 50), Span(1, 20, 30), Span(2, 0, 100)]
    calls = [Span(1, 25, 26), Span(1, 40, 41), Span(1, 60, 61), Span(1, 200, 201), Span(2, 5, 6)]
    assert enclosing(calls, ranges) == [(0, 1, 2), (0, 1), (0,), (), (3,)]


def test_a_call_that_outlasts_a_range_is_not_inside_it():
    assert enclosing([Span(1, 10, 40)], [Span(1, 0, 30)]) == [()]
