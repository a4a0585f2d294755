"""A stand-in A/B worker: speaks perfgate's worker protocol and reports the times its tree *declares*.

    python tests/ab_standin.py TREE SIDE SEED [-- -k EXPR]

The tree's `standin.json` says which perf tests exist, each case's time in ms (and its reference's), and
what goes wrong where: {"tests": {"test_x.py::test_a": {"test_x.py::test_a": 1.0}}, "noise_pct": 0.5,
"drift_pct": 0, "reference_ms": {case: ms}, "crash": "collect" | "prepare:CASE" | "round:CASE",
"hang": "round:CASE", "check_fails": [CASE], "test_fails": [NODEID], "collect_errors": {FILE: ERROR},
"offset_pct": {SIDE: pct}, "offset_rounds": N} (a process offset of one side's worker, in its first N
rounds of every case, or all of them without N: what alternation cannot cancel);
"first_process_offset_pct": {SIDE: pct} (the same, in the first worker of that side only: a fresh pair
of processes does not have it); "fresh_check_fails": [CASE] (the output check fails in a fresh pair's
workers only); "skips": {NODEID: REASON} (the test skips before it measures); with STANDIN_LOG set, each
test a worker runs is appended to that file as "SIDE SEED NODEID";
"sass": {CASE: HASH} (the case records one compiled kernel with that SASS hash: A/B's "same code" check);
"AA@round:CASE" crashes only the
worker of that side (BASE, HEAD or AA). A round's samples are the declared
time times a seeded log-normal noise (the seed differs per side, so the A/A twin is an independent
process) and a drift shared by the k-th round of every side (what alternation must cancel). No clock is
read: the tests of the coordinator depend on what was declared, never on the machine's speed.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import time
from pathlib import Path

from perfgate.ab.protocol import (
    WORKER_ENV,
    CaseReady,
    Collected,
    End,
    Failed,
    Prepared,
    RoundSamples,
    TestDone,
    WorkerEnd,
    event_message,
    reply_message,
)
from perfgate.compiled.records import CompiledCase, KernelFacts, KernelSource
from perfgate.model import CaseResult, Environment, Metric, Speedup, TestOutcome, Timer, TimingStats

ENV = Environment(device_kind="host", device_name="stand-in GPU", hostname="standin")


def main() -> None:
    tree, side, seed = Path(sys.argv[1]), sys.argv[2], sys.argv[3]  # SEED[.N]: the N-th fresh worker of SIDE
    args = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    keyword = args[args.index("-k") + 1] if "-k" in args else ""
    spec = json.loads((tree / "standin.json").read_text())
    end = WorkerEnd.from_env(os.environ[WORKER_ENV])
    rng = random.Random(f"{seed}-{side}")
    crash = spec.get("crash", "")
    if "@" in crash:  # "AA@round:CASE": only the worker of that side crashes
        crash_side, crash = crash.split("@", 1)
        spec["crash"] = crash if crash_side == side else ""
    spec["offset"] = 1 + spec.get("offset_pct", {}).get(side, 0.0) / 100
    spec["fresh"] = "." in seed  # a worker started after the first of its side: a fresh pair's
    if "." not in seed:  # the first worker of its side: a process offset of that process alone
        spec["offset"] *= 1 + spec.get("first_process_offset_pct", {}).get(side, 0.0) / 100
    if spec.get("crash") == "collect":
        print("ImportError: cannot import name 'kernel' from 'kernels' (stand-in)", flush=True)
        raise SystemExit(1)
    broken = spec.get("collect_errors", {})  # {file: error}: its tests do not import in this tree
    tests = {n: c for n, c in spec["tests"].items() if keyword in n and n.split("::")[0] not in broken}
    only = send(end, Collected(tuple(tests), tuple(broken.items()), ENV)).get("only")
    if only is not None:  # the coordinator asked for these tests only (a fresh pair): the others never run
        tests = {n: c for n, c in tests.items() if n in only}
    for nodeid, cases in tests.items():
        if os.environ.get("STANDIN_LOG"):
            with open(os.environ["STANDIN_LOG"], "a") as log:
                print(side, seed, nodeid, file=log)
        if nodeid in spec.get("skips", {}):
            send(end, TestDone(nodeid, TestOutcome.SKIPPED, spec["skips"][nodeid]))
            continue
        failed = ""
        for case_id, ms in cases.items():
            failed = serve(end, spec, case_id, nodeid, float(ms), rng) or failed
        if nodeid in spec.get("test_fails", ()):
            failed = "AssertionError: declared to fail"
        send(end, TestDone(nodeid, TestOutcome.FAILED if failed else None, failed))
    end.send(event_message(End(1 if any(n in spec.get("test_fails", ()) for n in tests) else 0)))


def send(end: WorkerEnd, event: Collected | TestDone) -> dict:
    end.send(event_message(event))
    reply = end.receive()
    assert reply["cmd"] == "continue"
    return reply


def serve(end: WorkerEnd, spec: dict, case_id: str, nodeid: str, ms: float, rng: random.Random) -> str:
    """One case: answer commands until done/skip; the failure text when its check fails."""
    end.send(event_message(CaseReady(case_id, nodeid)))
    reference = spec.get("reference_ms", {}).get(case_id)
    rounds = 0
    while True:
        cmd = end.receive()
        what = f"{cmd['cmd']}:{case_id}"
        if spec.get("crash") == what:
            print(f"Segmentation fault in {case_id} (stand-in)", flush=True)
            os._exit(139)
        if spec.get("hang") == what:
            while True:
                time.sleep(3600)  # the coordinator's timeout ends this, not the test
        if cmd["cmd"] in ("done", "skip"):
            return ""
        if cmd["cmd"] == "prepare":
            fresh_fails = spec.get("fresh_check_fails", ()) if spec.get("fresh") else ()
            if case_id in spec.get("check_fails", ()) or case_id in fresh_fails:
                end.send(reply_message(Failed("AssertionError: output differs from the reference (stand-in)")))
                return "AssertionError: output differs from the reference (stand-in)"
            case = skeleton(case_id, nodeid, ms, reference, spec.get("sass", {}).get(case_id))
            end.send(reply_message(Prepared(case, ms + (reference or 0.0))))
        elif cmd["cmd"] == "round":
            drift = 1 + spec.get("drift_pct", 0.0) / 100 * math.sin(rounds)
            if rounds < spec.get("offset_rounds", rounds + 1):
                drift *= spec["offset"]
            rounds += 1
            noise = spec.get("noise_pct", 0.5) / 100
            samples = tuple(ms * drift * math.exp(rng.gauss(0, noise)) for _ in range(cmd["samples"]))
            refs = tuple(reference * drift * math.exp(rng.gauss(0, noise)) for _ in samples) if reference else ()
            end.send(reply_message(RoundSamples(samples, refs)))


def skeleton(case_id: str, nodeid: str, ms: float, reference: float | None, sass: str | None = None) -> CaseResult:
    speedup = (
        Speedup("stand-in reference", (reference,), reference / ms, reference / ms, reference / ms)
        if reference
        else None
    )
    metrics = (Metric("memory.peak_allocated_bytes", 1024.0, "byte", "memory"),)
    if speedup is not None:
        metrics += (Metric("speedup", speedup.median, "x", "speedup", speedup.reference),)
    # CUDA events: the stand-in plays a GPU's worker (its rounds take the round's share of samples, and one shared
    # process has no offset of its own; the host clock's turn and rule are tests/test_ab_round_samples.py's and
    # tests/test_ab_host_offsets.py's); no numpy: a stand-in starts fast
    timing = TimingStats(Timer.CUDA_EVENT, 1, ms, ms, 0.0, ms, ms, ms, ms)
    return CaseResult(case_id, timing, (ms,), metrics, speedup=speedup, nodeid=nodeid, compiled=compiled(case_id, sass))


def compiled(case_id: str, sass: str | None) -> CompiledCase | None:
    if sass is None:
        return None
    kernel = KernelFacts(
        name=f"{case_id.rsplit('::', 1)[-1]}_kernel",
        source=KernelSource.TRITON,
        registers_per_thread=32,
        block=(128, 1, 1),
        grid=(1024, 1, 1),
        num_warps=4,
        sass_sha=sass,
        key=f"{case_id.rsplit('::', 1)[-1]}_kernel",
    )
    return CompiledCase((kernel,), "inputs", "f32[1024](1)@cuda", "sm_90", (("torch", "2.11.0"),))


if __name__ == "__main__":
    main()
