"""The code under test: a function a change could make slower (QUICKSTART_SLOW=1 does, on purpose)."""

import os


def pairwise_distances(points: list[tuple[float, float]]) -> list[float]:
    """Every pair's distance; with QUICKSTART_SLOW=1 each distance is computed three times, as a careless
    change might."""
    repeat = 3 if os.environ.get("QUICKSTART_SLOW") == "1" else 1
    out = []
    for i, (x1, y1) in enumerate(points):
        for x2, y2 in points[i + 1 :]:
            for _ in range(repeat):
                d = ((x1 - x2) ** 2 + (y1 - y2) ** 2) ** 0.5
            out.append(d)
    return out
