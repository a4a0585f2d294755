"""Lab (issue 30): what a loaded host does to A/B rounds on the host clock, sample by sample.

    python lab/ab_host_samples.py [--seconds 60] [--out trace.npz]
    python lab/ab_host_samples.py --analyse trace.npz

Records, in one thread, what the shared A/B host's rounds do to one case: two "sides" (the same callable:
an A/A) timed one after the other with the host clock's own loop (measure/host_clock.py), each sample's
start time and length kept. Then replays that series under round plans (samples per side and round,
statistic per round) and prints, per plan: the per-round log ratio's sd, its tails (share of rounds
beyond 5 robust sds: what the verdict sets aside as wild, and beyond 3), and how long slow stretches last.
The hand-over between sides is not in this trace (scripts/ab_handover_cost.py measures it); a round's
side switch here is back to back, so a plan's noise here is a lower bound of what the host sees.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

CALL_DATA = [random.Random(0).random() for _ in range(400)]  # as scripts/ab_host_cost.py's suite builds it


def record(seconds: float) -> tuple[np.ndarray, np.ndarray]:
    """(start ns, length ns per call) of every sample, back to back: sorted() on scripts/ab_host_cost.py's list,
    in the host clock's loop of calls (at least 10 us a sample, measure/host_clock.py)."""
    from perfgate.measure.host_clock import Invocation, calibrate_loops, perf_counter_clock, time_loop

    clock = perf_counter_clock()
    inv = Invocation(sorted, (CALL_DATA,))
    loops, _ = calibrate_loops(inv, clock)
    print(f"{loops} calls a sample")
    starts, lengths = [], []
    end = time.perf_counter_ns() + int(seconds * 1e9)
    read = time.perf_counter_ns
    while True:
        t0 = read()
        elapsed = time_loop(inv, loops, read)
        t1 = t0 + elapsed
        starts.append(t0)
        lengths.append(elapsed)  # the whole loop: ratios are per-call ratios, stretches are in time
        if t1 > end:
            break
    return np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.float64)


def slow_stretches(starts: np.ndarray, lengths: np.ndarray) -> None:
    med = float(np.median(lengths))
    for factor in (1.2, 1.5, 3.0, 20.0):
        slow = lengths > factor * med
        # stretches: consecutive slow samples; their duration in time
        edges = np.diff(np.concatenate([[0], slow.astype(np.int8), [0]]))
        begin, stop = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        spans_ms = (starts[stop - 1] + lengths[stop - 1] - starts[begin]) / 1e6 if begin.size else np.array([0.0])
        print(
            f"  samples > {factor:g}x median ({med / 1e3:.1f} us): {slow.mean() * 100:.2f}% of samples, "
            f"{begin.size} stretches, length ms p50 {np.median(spans_ms):.2f} p90 {np.quantile(spans_ms, 0.9):.2f} "
            f"max {spans_ms.max():.2f}"
        )


STATS = {
    "median": lambda a: np.median(a, axis=-1),
    "q25": lambda a: np.quantile(a, 0.25, axis=-1),
    "q10": lambda a: np.quantile(a, 0.10, axis=-1),
    "min": lambda a: a.min(axis=-1),
    "mean": lambda a: a.mean(axis=-1),
}


def replay(lengths: np.ndarray, per_side: int, interleave: int, stat: str) -> np.ndarray:
    """Per-round log ratios of B over A: a round is `per_side` samples of each side, in blocks of `interleave`
    samples alternating A, B, A, B ... (interleave = per_side: one side after the other, as the host does)."""
    per_round = 2 * per_side
    rounds = lengths.size // per_round
    x = lengths[: rounds * per_round].astype(np.float64).reshape(rounds, per_round // interleave, interleave)
    a = x[:, 0::2, :].reshape(rounds, -1)
    b = x[:, 1::2, :].reshape(rounds, -1)
    return np.log(STATS[stat](b) / STATS[stat](a))


def with_gap(lengths: np.ndarray, per_side: int, gap: int, rng: np.random.Generator) -> np.ndarray:
    """Per-round log ratios when each side's turn of `per_side` samples is followed by `gap` samples nobody
    measures (the hand-over), in mirrored pairs of rounds (ABBA / BAAB, a random start), medians per turn."""
    out, i = [], 0
    while i + 4 * (per_side + gap) < lengths.size:
        first = int(rng.integers(2))
        for order in ((first, 1 - first), (1 - first, first)):
            turn = {}
            for side in order:
                turn[side] = float(np.median(lengths[i : i + per_side]))
                i += per_side + gap
            out.append(np.log(turn[1] / turn[0]))
    return np.asarray(out)


def analyse(starts: np.ndarray, lengths: np.ndarray) -> None:
    span_s = (starts[-1] - starts[0]) / 1e9
    print(f"{lengths.size} samples over {span_s:.1f} s")
    slow_stretches(starts, lengths)
    print("  plan (samples/side/round, interleave, statistic): round sd %, >3 sd %, >5 sd % (robust), rounds")
    for per_side in (10, 25, 50, 100, 200):
        for interleave in sorted({per_side, 5, 1}):
            if interleave > per_side:
                continue
            for stat in STATS:
                r = replay(lengths, per_side, interleave, stat)
                med = np.median(r)
                mad = 1.4826 * np.median(np.abs(r - med))
                sd = float(np.std(r))
                far3 = float(np.mean(np.abs(r - med) > 3 * mad)) * 100
                far5 = float(np.mean(np.abs(r - med) > 5 * mad)) * 100
                print(
                    f"  {per_side:4d} {interleave:4d} {stat:>6}: sd {sd * 100:6.2f}%  robust {mad * 100:5.2f}%  "
                    f">3 {far3:5.1f}%  >5 {far5:5.1f}%  ({r.size})"
                )
    gap = int(4e6 / float(np.median(lengths)))  # ~4 ms: a hand-over and the wake-ups of a loaded host
    print(f"  turns one side after the other, {gap} samples (~4 ms) apart, ABBA: 20-round means' sd")
    for per_side in (25, 50, 100, 200, 400, 800):
        r = with_gap(lengths, per_side, gap, np.random.default_rng(0))
        means = r[: r.size // 20 * 20].reshape(-1, 20).mean(axis=1)
        print(f"  {per_side:4d} a turn: round sd {np.std(r) * 100:5.2f}%, 20-round mean sd {np.std(means) * 100:5.3f}%")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--out")
    p.add_argument("--analyse")
    args = p.parse_args()
    if args.analyse:
        z = np.load(args.analyse)
        analyse(z["starts"], z["lengths"])
        return
    starts, lengths = record(args.seconds)
    if args.out:
        np.savez_compressed(args.out, starts=starts, lengths=lengths)
    analyse(starts, lengths)


if __name__ == "__main__":
    main()
