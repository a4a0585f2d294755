def test_sum(perfgate):
    perfgate(sum, range(2000))


def test_sorted(perfgate):
    perfgate(sorted, list(range(500, 0, -1)))
