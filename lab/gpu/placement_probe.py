"""Is a case's per-process offset a memory-placement effect? One process, each case's inputs allocated at
several places (a random spacer before each fresh set), every placement measured in interleaved repeats
with A/B mode's own round timing (perfgate.measure.timer.measure_calls, 40 ms of samples, L2 flushed).

    python lab/gpu/placement_probe.py OUT.json [--placements 10] [--repeats 4]

Writes {case: [[repeat medians of placement 0], ...]}. Run it in a few fresh processes: the spread of
placement means inside one process against the spread of process means says whether fixed per-process
offsets (A/B's A/A) come from where the inputs sit.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts" / "accuracy")]

import torch  # noqa: E402
from test_accuracy_cases import CASES, _gpu_spin  # noqa: E402

from perfgate.config.settings import MeasureOptions  # noqa: E402
from perfgate.measure.timer import measure_calls  # noqa: E402
from perfgate.model import Timer  # noqa: E402

NAMES = ("small_add", "copy", "cublas_matmul", "triton_matmul", "attention")
ROUND_MS = 40.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--placements", type=int, default=10)
    p.add_argument("--repeats", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    rng = random.Random(args.seed)
    out: dict[str, list[list[float]]] = {}
    for name in NAMES:
        kept = []
        calls = []
        for _ in range(args.placements):
            spacer = torch.empty(
                rng.randrange(0, 64) * (1 << 20) + rng.randrange(0, 4096) * 512, dtype=torch.uint8, device="cuda"
            )
            fn, inputs, _ref = CASES[name]()
            call = _gpu_spin(fn, inputs, 0.0)
            kept.append((spacer, inputs))
            calls.append(lambda call=call, inputs=inputs: call(*inputs))
        for c in calls:  # compile / first calls
            c()
        torch.cuda.synchronize()
        est = measure_calls(
            [calls[0]],
            replace(MeasureOptions(), min_samples=5, max_samples=5, cooldown_max_ms=0.0),
            Timer.CUDA_EVENT,
            None,
        )
        per_call = statistics.median(est.samples_ms[-1])
        n = int(max(5, min(200, ROUND_MS // max(per_call, 1e-9))))
        options = replace(
            MeasureOptions(), warmup_ms=5.0, min_samples=n, max_samples=n, cooldown_max_ms=0.0, exclude_throttled=False
        )
        medians: list[list[float]] = [[] for _ in calls]
        for _ in range(args.repeats):
            order = list(range(len(calls)))
            rng.shuffle(order)
            for i in order:
                m = measure_calls([calls[i]], options, Timer.CUDA_EVENT, None, per_round_ms=per_call)
                medians[i].append(statistics.median(m.samples_ms[-1]))
        out[name] = medians
        means = [statistics.fmean(v) for v in medians]
        grand = statistics.fmean(means)
        within = statistics.fmean(statistics.stdev(v) / grand * 100 for v in medians)
        lo, hi = (x / grand * 100 - 100 for x in (min(means), max(means)))
        print(
            f"placement-probe: {name}: {grand * 1000:.1f} us, n={n}; repeat sd {within:.2f}%, placement sd "
            f"{statistics.stdev(means) / grand * 100:.2f}% (range {lo:+.2f}..{hi:+.2f}%)",
            flush=True,
        )
        del kept, calls
        torch.cuda.empty_cache()
    Path(args.out).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
