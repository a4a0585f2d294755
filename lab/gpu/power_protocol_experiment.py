"""The experiment behind perfgate's power-state protocol (issue 9): which procedure before sampling makes a
case's median the same in every process, whatever ran before it?

Standalone (torch + pynvml, no perfgate) so it measures the GPU, not the tool. Read-only on the GPU: it
never changes clocks, power limits or any other setting.

  python lab/gpu/power_protocol_experiment.py OUT_DIR            # parts A-C, writes OUT_DIR/power_*.json
  (it starts itself again as `--child PROTOCOL SEED OUT.json` for each fresh process of part C)

A: per-call times and NVML readings through 4 s of sustained cuBLAS load, then NVML for 2 s of idle.
B: recovery: after sustained load, idle for t ms, then measure the matmul for 40 ms.
C: protocols in fresh processes, each case preceded by a random 0-2 s of heavy load (as different
   preceding cases or -k selections would leave the GPU): spread of the process medians per case.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

PERF_LIMITING = 0x4 | 0x8 | 0x20 | 0x40 | 0x80  # sw power cap, hw slowdown, sw/hw thermal, power brake
FLUSH_BYTES = 256 * 1024 * 1024


def nvml_handle():
    import pynvml

    pynvml.nvmlInit()
    return pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)


def nvml_read(nv, h):
    return {
        "t": time.perf_counter(),
        "sm": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
        "mem": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
        "power_w": nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
        "temp_c": nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
        "reasons": int(nv.nvmlDeviceGetCurrentClocksEventReasons(h)),
    }


def cases(torch):
    g = torch.Generator(device="cuda").manual_seed(0)
    bf = torch.bfloat16
    a, b = (
        torch.randn(6144, 4096, device="cuda", dtype=bf, generator=g),
        torch.randn(4096, 3072, device="cuda", dtype=bf, generator=g),
    )
    q, k, v = (torch.randn(4, 32, 4096, 128, device="cuda", dtype=bf, generator=g) for _ in range(3))
    src, dst = torch.randn(1 << 27, device="cuda", generator=g), torch.empty(1 << 27, device="cuda")
    x = torch.randn(16384, 8192, device="cuda", dtype=bf, generator=g)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def attn():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    return {
        "cublas_matmul": lambda: a @ b,
        "sdpa_flash": attn,
        "copy": lambda: dst.copy_(src),
        "softmax": lambda: torch.softmax(x, dim=-1),
    }


def heavy(torch, seconds):
    """Sustained tensor-core load (8192^3 bf16 products) for `seconds`."""
    if seconds <= 0:
        return
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(4):
            a @ a
        torch.cuda.synchronize()


def sample(torch, fn, flush, budget_ms=400.0, min_n=20, max_n=200, warmup_ms=25.0):
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(5):
        flush.zero_()
        fn()
    e.record()
    torch.cuda.synchronize()
    per = s.elapsed_time(e) / 5
    for _ in range(max(1, int(warmup_ms / per))):
        fn()
    n = int(max(min_n, min(max_n, budget_ms // per)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for st, en in zip(starts, ends):
        flush.zero_()
        st.record()
        fn()
        en.record()
    torch.cuda.synchronize()
    return [st.elapsed_time(en) for st, en in zip(starts, ends)]


def cooldown(nv, h, max_s=3.0, settle_s=0.0):
    """Wait until no performance-limiting reason is reported (bounded); then `settle_s` more."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < max_s:
        if not nvml_read(nv, h)["reasons"] & PERF_LIMITING:
            break
        time.sleep(0.01)
    time.sleep(settle_s)
    return time.perf_counter() - t0


def child(protocol, seed, out):
    import torch

    nv, h = nvml_handle()
    rng = random.Random(seed)
    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    result = {"protocol": protocol, "seed": seed, "cases": {}}
    for name, fn in cases(torch).items():
        fn()
        torch.cuda.synchronize()
        prior = rng.uniform(0.0, 2.0)
        heavy(torch, prior)
        waited = 0.0
        if protocol.startswith("cooldown"):
            settle = float(protocol.split(":", 1)[1]) if ":" in protocol else 0.0
            waited = cooldown(nv, h, settle_s=settle)
        elif protocol == "idle1s":
            time.sleep(1.0)
            waited = 1.0
        elif protocol == "precondition":
            end = time.perf_counter() + 2.0
            while time.perf_counter() < end:
                fn()
                torch.cuda.synchronize()
        before = nvml_read(nv, h)
        samples = sample(torch, fn, flush)
        after = nvml_read(nv, h)
        result["cases"][name] = {
            "median_ms": statistics.median(samples),
            "prior_s": prior,
            "waited_s": waited,
            "reasons_before": before["reasons"],
            "reasons_after": after["reasons"],
            "sm_before": before["sm"],
            "sm_after": after["sm"],
            "n": len(samples),
        }
    Path(out).write_text(json.dumps(result))


def part_a(torch, nv, h):
    a = torch.randn(6144, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 3072, device="cuda", dtype=torch.bfloat16)
    a @ b
    torch.cuda.synchronize()
    time.sleep(3.0)
    rows, polls = [], []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 4.0:
        st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        st.record()
        for _ in range(50):
            a @ b
        en.record()
        en.synchronize()
        rows.append({"t": time.perf_counter() - t0, "per_call_ms": st.elapsed_time(en) / 50})
        r = nvml_read(nv, h)
        r["t"] -= t0
        polls.append(r)
    t1 = time.perf_counter()
    after = []
    while time.perf_counter() - t1 < 2.0:
        r = nvml_read(nv, h)
        r["t"] -= t1
        after.append(r)
        time.sleep(0.02)
    return {"load": rows, "polls": polls, "after_load": after}


def part_b(torch, nv, h):
    a = torch.randn(6144, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 3072, device="cuda", dtype=torch.bfloat16)
    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    out = []
    for idle_ms in (0, 50, 100, 200, 400, 800, 1500, 3000):
        heavy(torch, 2.5)
        time.sleep(idle_ms / 1000)
        before = nvml_read(nv, h)
        samples = sample(torch, lambda: a @ b, flush, budget_ms=40.0)
        out.append(
            {
                "idle_ms": idle_ms,
                "median_ms": statistics.median(samples),
                "reasons_before": before["reasons"],
                "sm_before": before["sm"],
                "power_before_w": before["power_w"],
            }
        )
    return out


def main(out_dir):
    import torch

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    nv, h = nvml_handle()
    props = torch.cuda.get_device_properties(0)
    info = {
        "device": props.name,
        "uuid": str(getattr(props, "uuid", "")),
        "nvml_uuid": nv.nvmlDeviceGetUUID(h),
        "power_limit_w": nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000,
        "idle": nvml_read(nv, h),
    }
    t = time.perf_counter()
    info["part_a"] = part_a(torch, nv, h)
    info["part_b"] = part_b(torch, nv, h)
    info["parts_ab_s"] = time.perf_counter() - t
    (out_dir / "power_ab.json").write_text(json.dumps(info))
    runs = []
    for protocol in ("none", "cooldown", "cooldown:0.3", "precondition"):
        for seed in range(5):
            path = out_dir / f"child_{protocol.replace(':', '_')}_{seed}.json"
            subprocess.run(
                [sys.executable, __file__, "--child", protocol, str(seed), str(path)],
                check=True,
                timeout=120,
                env=os.environ.copy(),
            )
            runs.append(json.loads(path.read_text()))
            path.unlink()
    (out_dir / "power_protocols.json").write_text(json.dumps(runs))
    summarize(info, runs)


def summarize(info, runs):
    print(f"device {info['device']}, power limit {info['power_limit_w']:.0f} W, idle {info['idle']}")
    load = info["part_a"]["load"]
    print("A: sustained cuBLAS load, per-call ms by time since start (s):")
    for row, poll in list(zip(load, info["part_a"]["polls"]))[:: max(1, len(load) // 16)]:
        print(
            f"  t={row['t']:.2f} {row['per_call_ms']:.4f} ms  sm={poll['sm']} MHz  {poll['power_w']:.0f} W  "
            f"reasons=0x{poll['reasons']:x}"
        )
    print("A: after the load stops:")
    for poll in info["part_a"]["after_load"][::10]:
        print(f"  t={poll['t']:.2f} sm={poll['sm']} {poll['power_w']:.0f} W reasons=0x{poll['reasons']:x}")
    print("B: idle after 2.5 s of load, then 40 ms of matmul:")
    for row in info["part_b"]:
        print(
            f"  idle {row['idle_ms']:5d} ms: median {row['median_ms']:.4f} ms "
            f"reasons_before=0x{row['reasons_before']:x} "
            f"sm={row['sm_before']} {row['power_before_w']:.0f} W"
        )
    print("C: process medians per protocol and case (5 fresh processes, random 0-2 s prior load):")
    for protocol in sorted({r["protocol"] for r in runs}):
        for case in runs[0]["cases"]:
            meds = [r["cases"][case]["median_ms"] for r in runs if r["protocol"] == protocol]
            waited = [r["cases"][case]["waited_s"] for r in runs if r["protocol"] == protocol]
            spread = 100 * (max(meds) - min(meds)) / statistics.median(meds)
            sd = 100 * statistics.stdev(meds) / statistics.median(meds)
            print(
                f"  {protocol:13s} {case:14s} median {statistics.median(meds):.4f} ms  spread {spread:5.2f}%  "
                f"sd {sd:5.2f}%  waited {statistics.mean(waited):.2f} s"
            )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) > 1 and sys.argv[1] == "--summary":
        d = Path(sys.argv[2])
        summarize(json.loads((d / "power_ab.json").read_text()), json.loads((d / "power_protocols.json").read_text()))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "power-experiment")
