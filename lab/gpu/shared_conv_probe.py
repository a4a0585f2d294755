"""Why a cuDNN channels_last bf16 conv2d flips between ~57 and 100-118 us in streaks when base and head share
one process (issue 30: separate processes held it to +-0.1%), and what removes it.

Two "sides", each with its own inputs, measure the same conv in alternating rounds (ABBA order, A/B
mode's round procedure: perfgate's measure_calls with the 256 MB L2 flush per sample, inputs moved behind
random spacers every round as perfgate.ab.placement does) under variants that each take one suspect away:

    threads     one process, a thread per side, one at a time (what the shared host does)
    one-thread  one process, both sides in the main thread (cuDNN's plan cache and handle are per thread)
    pools       threads, each side's allocations in its own torch.cuda.MemPool (the caching allocator split)
    keep-place  threads, inputs never moved (no spacers: less allocator churn)
    benchmark   threads, torch.backends.cudnn.benchmark = True (timed plan choice, then emptyCache)
    separate    a process per side (the reference: +-0.1% on the H100)

Per round and side: the median (us), the host's enqueue time per call (us, no sync: a call slower to
enqueue than the flush + kernel takes puts host time inside the events), how often the caching allocator
went to the device while the samples were timed, and every 5th round the CUDA kernels one call launched
(the cuDNN engine chosen). Prints a table per variant (`conv-probe:` lines) and writes
$OUT/shared_conv_probe.json.

    source .device-env/setup.sh && python3 lab/gpu/shared_conv_probe.py [--rounds 200] [--variants ...]
    python3 lab/gpu/shared_conv_probe.py --cpu-check   # the plumbing only, on a machine without a GPU
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

VARIANTS = ("threads", "one-thread", "pools", "keep-place", "benchmark", "separate")
ROUND_MS = 2.0  # one side's share of a round: ~35 samples of a 57 us conv (A/B mode's default budget / rounds)
PROFILE_EVERY = 5


class Side:
    """One side's inputs and round measurement (what perfgate's A/B worker does in a round)."""

    def __init__(self, name: str, shape: tuple[int, ...], cpu: bool, move: bool) -> None:
        import torch

        n, c, h, w, k, r = shape
        device, dtype = ("cpu", torch.float32) if cpu else ("cuda", torch.bfloat16)
        self.name, self.cpu, self.move = name, cpu, move
        self.x = torch.randn(n, c, h, w, device=device, dtype=dtype).to(memory_format=torch.channels_last)
        self.w = torch.randn(k, c, r, r, device=device, dtype=dtype).to(memory_format=torch.channels_last)
        self.rng = random.Random(name)  # noqa: S311
        self.per_call_ms: float | None = None

    def call(self, x: Any, w: Any) -> Any:
        import torch

        return torch.nn.functional.conv2d(x, w, padding=1)

    def round(self, n: int, profile: bool) -> dict[str, Any]:
        from perfgate.ab.placement import moved, on_cuda
        from perfgate.config.settings import MeasureOptions
        from perfgate.measure.timer import measure_calls
        from perfgate.model import Timer

        on_device = lambda t: self.cpu or on_cuda(t)  # noqa: E731
        placed = moved((self.x, self.w), {}, self.rng, on_device=on_device) if self.move else None
        x, w = placed.args if placed is not None else (self.x, self.w)
        options = replace(MeasureOptions(), warmup_ms=5.0, min_samples=n, max_samples=n, cooldown_max_ms=0.0)
        timer = Timer.HOST if self.cpu else Timer.CUDA_EVENT
        m = measure_calls([lambda: self.call(x, w)], options, timer, None, per_round_ms=self.per_call_ms)
        samples = m.samples_ms[-1]
        t0 = time.perf_counter_ns()
        for _ in range(20):
            self.call(x, w)
        host_us = (time.perf_counter_ns() - t0) / 20 / 1e3
        return {
            "side": self.name,
            "median_us": 1e3 * statistics.median(samples),
            "host_us": host_us,
            "device_allocations": m.device_allocations,
            "kernels": _kernels(lambda: self.call(x, w)) if profile and not self.cpu else [],
        }


def _kernels(call: Any) -> list[str]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if "memset" not in e.name.lower() and e.device_type.name == "CUDA"})


def _orders(rounds: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)  # noqa: S311
    out = []
    for r in range(rounds):
        first = rng.choice("AB") if r % 2 == 0 else ("B" if out[-1][0] == "A" else "A")
        out.append((first, "B" if first == "A" else "A"))
    return out


def in_one_process(variant: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Both sides in this process: a thread each (handing a turn back and forth), or the main thread."""
    import torch

    torch.backends.cudnn.benchmark = variant == "benchmark"
    shape = tuple(int(v) for v in args.shape.split(","))
    rows: list[dict[str, Any]] = []
    if variant == "one-thread":
        sides = {s: Side(s, shape, args.cpu_check, True) for s in "AB"}
        _calibrate(sides.values(), args)
        for r, order in enumerate(_orders(args.rounds, args.seed)):
            rows += [{**sides[s].round(_n(sides[s]), r % PROFILE_EVERY == 0), "round": r} for s in order]
        return rows
    turns = {s: threading.Event() for s in "AB"}
    done = threading.Event()
    ready = threading.Barrier(3)
    plan = _orders(args.rounds, args.seed)

    def worker(name: str) -> None:
        pool = _pool(variant, args.cpu_check)
        with pool if pool is not None else _nothing():
            side = Side(name, shape, args.cpu_check, variant != "keep-place")
            _calibrate([side], args)
            ready.wait()
            for r, order in enumerate(plan):
                for _ in range(order.count(name)):
                    turns[name].wait()
                    turns[name].clear()
                    rows.append({**side.round(_n(side), r % PROFILE_EVERY == 0), "round": r})
                    done.set()

    threads = [threading.Thread(target=worker, args=(s,), name=f"side-{s}") for s in "AB"]
    for t in threads:
        t.start()
    ready.wait()
    for order in plan:
        for s in order:
            done.clear()
            turns[s].set()
            done.wait()
    for t in threads:
        t.join()
    return rows


def _pool(variant: str, cpu: bool) -> Any:
    import torch

    if variant != "pools" or cpu:
        return None
    if not hasattr(torch.cuda, "MemPool") or not hasattr(torch.cuda, "use_mem_pool"):
        raise SystemExit("conv-probe: this torch has no torch.cuda.MemPool / use_mem_pool")
    return torch.cuda.use_mem_pool(torch.cuda.MemPool())


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _calibrate(sides: Any, args: argparse.Namespace) -> None:
    """One call's time (what A/B mode's prepare estimates), warm-up and first calls (plan choice) included."""
    for side in sides:
        for _ in range(3):
            side.call(side.x, side.w)
        side.per_call_ms = max(1e-3, side.round(5, False)["median_us"] / 1e3)


def _n(side: Side) -> int:
    return int(max(5, min(200, ROUND_MS / (side.per_call_ms or 0.057))))


def _child(name: str, conn: Any, args: argparse.Namespace) -> None:
    """A side in a process of its own: measures a round whenever the parent says so."""
    shape = tuple(int(v) for v in args.shape.split(","))
    side = Side(name, shape, args.cpu_check, True)
    _calibrate([side], args)
    conn.send("ready")
    while (msg := conn.recv()) is not None:
        conn.send(side.round(_n(side), msg))


def in_two_processes(args: argparse.Namespace) -> list[dict[str, Any]]:
    ctx = mp.get_context("spawn")
    pipes, procs = {}, []
    for s in "AB":
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_child, args=(s, child, args))
        proc.start()
        pipes[s], procs = parent, [*procs, proc]
    for s in "AB":
        pipes[s].recv()
    rows = []
    for r, order in enumerate(_orders(args.rounds, args.seed)):
        for s in order:
            pipes[s].send(r % PROFILE_EVERY == 0)
            rows.append({**pipes[s].recv(), "round": r})
    for s in "AB":
        pipes[s].send(None)
    for proc in procs:
        proc.join(60)
    return rows


def summary(variant: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per side: median of round medians, spread, slow rounds (> 1.3x the fastest round), streaks of them,
    and what the slow rounds have that the others do not."""
    fastest = min(r["median_us"] for r in rows)
    out: dict[str, Any] = {"variant": variant}
    for s in "AB":
        mine = sorted((r for r in rows if r["side"] == s), key=lambda r: r["round"])
        slow = [r for r in mine if r["median_us"] > 1.3 * fastest]
        streaks = sum(1 for a, b in zip([None, *mine], mine) if b in slow and (a is None or a not in slow))
        out[s] = {
            "median_us": round(statistics.median(r["median_us"] for r in mine), 2),
            "min_us": round(min(r["median_us"] for r in mine), 2),
            "max_us": round(max(r["median_us"] for r in mine), 2),
            "slow_rounds": len(slow),
            "streaks": streaks,
            "host_us_fast": _mean([r["host_us"] for r in mine if r not in slow]),
            "host_us_slow": _mean([r["host_us"] for r in slow]),
            "allocating_rounds_slow": sum(1 for r in slow if r["device_allocations"]),
            "allocating_rounds_fast": sum(1 for r in mine if r not in slow and r["device_allocations"]),
            "kernels": sorted({k for r in mine for k in r["kernels"]})[:6],
        }
    a, b = (sorted((r for r in rows if r["side"] == s), key=lambda r: r["round"]) for s in "AB")
    ratios = [y["median_us"] / x["median_us"] for x, y in zip(a, b)]
    out["ratio_sd_pct"] = round(100 * statistics.stdev(ratios), 3) if len(ratios) > 1 else None
    return out


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 2) if values else None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--shape", default="16,256,28,28,256,3", help="N,C,H,W,K,R of the conv (input NCHW, KxCxRxR)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cpu-check", action="store_true", help="a small float32 conv on the CPU: the plumbing only")
    args = p.parse_args()
    if args.cpu_check:
        args.shape, args.rounds = "1,8,8,8,8,3", min(args.rounds, 6)
    results = []
    for variant in args.variants.split(","):
        t0 = time.monotonic()
        rows = in_two_processes(args) if variant == "separate" else in_one_process(variant, args)
        s = summary(variant, rows)
        s["wall_s"] = round(time.monotonic() - t0, 1)
        results.append({"summary": s, "rounds": rows})
        for side in "AB":
            print(f"conv-probe: {variant:10s} side {side} {json.dumps(s[side])}", flush=True)
        print(f"conv-probe: {variant:10s} ratio sd {s['ratio_sd_pct']}% wall {s['wall_s']} s", flush=True)
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    (out / "shared_conv_probe.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
