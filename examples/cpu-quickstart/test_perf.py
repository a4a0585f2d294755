"""The perf tests: `perfgate` times each case on the host clock (no GPU needed) and gates it."""

from shapes import pairwise_distances

POINTS = [(float(i % 17), float(i // 17)) for i in range(60)]


def test_pairwise_distances(perfgate):
    perfgate(pairwise_distances, POINTS)


def test_sorted(perfgate):
    values = [(i * 7919) % 1000 for i in range(2000)]
    perfgate(sorted, values)
