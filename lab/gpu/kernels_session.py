"""Issue 34 on one GPU, one command (within ~300 s): the compiled kernels of the bundled suite, the static gate
on de-tuned kernels, A/B skipping the cases whose code did not change, cold, restored and warm gate times.

    source .device-env/setup.sh >/dev/null && python3 lab/gpu/kernels_session.py --budget-s 290

One GPU: CUDA_VISIBLE_DEVICES's first when set, else the visible GPU with the least memory in use (a shared
host); every child runs on it. Every step is independent (one that fails or times out loses no other's
numbers; each starts only while the budget lasts). On a GPU that is not the committed baseline's (an H100 80GB
HBM3) the timing gates run with `--perfgate-confirm-runs=0`: cases a wrong baseline moved would otherwise be
confirmed in fresh processes, and the wall time would measure that, not the cold start. Every log under
$OUT/kernels_session.tgz, the summary in $OUT/kernels_session.md, lines prefixed `kernels-session:`.

1. cold: a strict gate of kernels/tests/test_perf.py with empty Triton, CUDA-extension and cubin caches (wall
   time, the phase line, the kernels Triton compiled: one per pinned autotuner);
2. warm: the same checkout again with its caches kept; the suite's kernels with their static facts;
3. static: a baseline with the compiled facts of the newest gate's JSON; the gate of matmul and rms_norm with
   KERNELS_DETUNE=matmul,rms_norm (the static gate fails, in words), then unchanged (quiet) if time is left;
4. A/B: a throwaway repository whose head changes the softmax kernel only, on the warm caches: `perfgate ab`
   skips the other cases as unchanged (same code) and says the GPU time saved;
5. restored: the strict gate in a fresh checkout with copies of the caches in other directories (what a new
   runner gets from actions/cache: every cache is keyed by content, none by path);
6. crosscheck (only with time left): each suite kernel's facts against the driver (cuFuncGetAttribute, the CUDA
   occupancy API), the CUDA C++ kernel's from the cubin the driver runs.

$OUT/compiled/ gets what tests/data/compiled/ can take: the suite's compiled facts as this GPU recorded them,
the cross-check, the CUDA C++ kernel's torch.profiler trace.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ab_lab as lab  # noqa: E402

SUITE = "kernels/tests/test_perf.py"
H100 = "baselines/nvidia-h100-80gb-hbm3.json"
SCRATCH = lab.SCRATCH_ROOT / "kernels"
COMPILED_OUT = lab.OUT / "compiled"
SUMMARY: list[str] = []


def say(line: str) -> None:
    lab.log(f"kernels-session: {line}")
    SUMMARY.append(line)


def gate_argv(name: str, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", SUITE, "--perfgate",
        f"--perfgate-json={lab.LOGS / (name + '.json')}", f"--perfgate-summary={lab.LOGS / (name + '.md')}",
        f"--perfgate-db={SCRATCH / 'history.db'}", *extra,
    ]  # fmt: skip


def caches(name: str, fresh: bool = False, like: str = "") -> dict[str, str]:
    """The three caches a runner keeps (Triton's, the extension builds, the read cubins) under SCRATCH/name:
    emptied when `fresh`, copied from SCRATCH/like when given (a restore into other directories)."""
    base = SCRATCH / name
    if fresh or like:
        shutil.rmtree(base, ignore_errors=True)
    if like:
        shutil.copytree(SCRATCH / like, base, symlinks=True)
    for sub in ("triton", "kernels", "cubins"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    return {
        "TRITON_CACHE_DIR": str(base / "triton"),
        "PERFGATE_KERNEL_CACHE": str(base / "kernels"),
        "PERFGATE_CUBIN_CACHE": str(base / "cubins"),
    }


def pick_gpu() -> str:
    """One GPU for every child: CUDA_VISIBLE_DEVICES's first entry, else the one with the least memory used."""
    named = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if not named:
        rows = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,memory.used", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.splitlines()
        used = [(float(m), i.strip()) for i, m in (r.split(",") for r in rows if r.count(",") == 1)]
        named = min(used)[1] if used else "0"
    os.environ["CUDA_VISIBLE_DEVICES"] = named
    return named


def interesting(text: str) -> list[str]:
    keep = ("perfgate: timing phase", "perfgate: gate", "perfgate: confirmed", "regressed (static", "why ",
            "inconclusive (static", "perfgate: A/B", "unchanged (same code")  # fmt: skip
    return [line for line in text.splitlines() if line.startswith(keep) or "(static" in line]


def compiled_counts(triton_dir: Path) -> Counter[str]:
    """The kernels Triton compiled into a cache: one metadata JSON per compiled specialisation."""
    return Counter(p.stem for p in triton_dir.glob("*/*.json") if not p.name.startswith("__grp__"))


def run_gate(
    name: str, env: dict[str, str], limit_s: float, *extra: str, cwd: Path = lab.ROOT
) -> tuple[int, float, str]:
    code, wall, text = lab.timed(name, gate_argv(name, *extra), cwd, env, limit_s)
    for line in interesting(text):
        lab.log(f"  {line}")
    return code, wall, text


def phase_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.startswith("perfgate: timing phase")), "")


# the timing gates' flags on a GPU that is not the committed baseline's (main sets them): that baseline, its
# environment's differences allowed, no confirmation rounds
OTHER_GPU_ARGS = [f"--perfgate-baseline-file={H100}", "--perfgate-allow-env-mismatch", "--perfgate-confirm-runs=0"]
GATE_ARGS: list[str] = []
# the gates' JSON results, newest first: the static step and the facts' listing take the first that exists
FACTS_FROM = ("warm", "restored", "cold")


def gate_summary(text: str) -> str:
    verdict = next((line for line in text.splitlines() if line.startswith("perfgate: gate")), "")
    confirmations = sum(1 for line in text.splitlines() if line.startswith("perfgate: confirmed"))
    return f"{verdict}; {confirmations} confirmation round(s)"


def step_cold(limit_s: float) -> None:
    """A strict gate with empty caches: what an ephemeral runner pays when nothing was restored."""
    env = lab.env_with(**caches("cold", fresh=True))
    code, wall, text = run_gate("cold", env, limit_s, "--perfgate-strict", *GATE_ARGS)
    say(f"cold strict gate (empty caches): exit {code}, {wall:.1f} s wall; {gate_summary(text)}")
    say(f"cold: {phase_line(text) or 'no phase line (see cold.log)'}")
    counts = compiled_counts(Path(env["TRITON_CACHE_DIR"]))
    say("cold: Triton compiled " + ", ".join(f"{k} x{n}" for k, n in sorted(counts.items())))
    if (lab.LOGS / "cold.json").is_file():
        say(recording_line(lab.LOGS / "cold.json"))
    say(f"cold: {extension_build_line(Path(env['PERFGATE_KERNEL_CACHE']))}")


def extension_build_line(cache: Path) -> str:
    """How long the CUDA extension's build took in the background: its log's start to its module's write."""
    found = [(d / "build.log", d / "perfgate_rms_norm.so") for d in cache.glob("rms_norm-*")]
    done = [(log, so) for log, so in found if log.is_file() and so.is_file()]
    if not done:
        return f"the CUDA extension: no background build log with a module in {cache}"
    log, _ = done[0]
    last = (log.read_text(errors="replace").strip().splitlines() or [""])[-1]
    took = re.search(r"\(([0-9.]+) s\)$", last)
    if took is None:
        return f"the CUDA extension: {log} does not say how long its build took ({last[:80]!r})"
    return f"the CUDA extension built in the background in {took.group(1)} s (its child process, imports included)"


def step_warm(limit_s: float) -> None:
    """The same checkout, its caches kept; then the suite's kernels with their facts."""
    env = lab.env_with(**caches("cold"))
    code, wall, text = run_gate("warm", env, limit_s, "--perfgate-strict", *GATE_ARGS)
    say(f"warm strict gate (caches kept): exit {code}, {wall:.1f} s wall; {gate_summary(text)}")
    say(f"warm: {phase_line(text) or 'no phase line (see warm.log)'}")
    list_compiled(newest_results())


def step_restored(limit_s: float) -> None:
    """A fresh checkout of the project (its baselines with it) with copies of the cold run's caches."""
    checkout = lab.new_project(SCRATCH / "restored-checkout", files=(*lab.SUITE_FILES, "baselines"))
    restored = lab.env_with(**caches("restored", like="cold"))
    code, wall, text = run_gate("restored", restored, limit_s, "--perfgate-strict", *GATE_ARGS, cwd=checkout)
    say(f"restored-cache strict gate (new checkout, caches copied): exit {code}, {wall:.1f} s; {gate_summary(text)}")
    say(f"restored: {phase_line(text) or 'no phase line (see restored.log)'}")


def newest_results() -> Path:
    found = [lab.LOGS / f"{name}.json" for name in FACTS_FROM if (lab.LOGS / f"{name}.json").is_file()]
    if not found:
        raise FileNotFoundError(f"no gate JSON results ({', '.join(FACTS_FROM)}) in {lab.LOGS}")
    return found[0]


def list_compiled(results: Path) -> None:
    """The suite's kernels with their static facts (and any note), as the warm gate recorded them."""
    doc = json.loads(results.read_text())
    COMPILED_OUT.mkdir(parents=True, exist_ok=True)
    say(f"the suite's kernels as {results.name} recorded them:")
    suite = {c["case_id"]: c.get("compiled") for c in doc.get("cases", [])}
    (COMPILED_OUT / "h100_suite_compiled.json").write_text(json.dumps(suite, indent=1, sort_keys=True) + "\n")
    for cid, rec in suite.items():
        for k in (rec or {}).get("kernels", []):
            occ = k.get("occupancy") or {}
            say(
                f"  {cid.split('::')[-1]}: {k['source']} {k['name'][:60]} regs {k['registers_per_thread']} "
                f"spills {k['spill_store_bytes']}/{k['spill_load_bytes']} shared {k['static_shared_bytes']}+"
                f"{k['dynamic_shared_bytes']} block {k['block']} grid {k['grid']} warps {k['num_warps']} "
                f"stages {k['num_stages']} occupancy {occ.get('pct')} % ({occ.get('limiter')}) sass {k['sass_sha']}"
                f" x{k['launches']}"
            )
        for note in (rec or {}).get("notes", []):
            say(f"  {cid.split('::')[-1]}: note: {note}")
    say(recording_line(results))


def recording_line(results: Path) -> str:
    """Each case's compiled-kernel recording time (s), the profiler's part for a CUDA module after a '+'."""
    doc = json.loads(results.read_text())
    parts = []
    for case in doc.get("cases", []):
        spent = dict(case.get("phases_s") or [])
        launches = spent.get("CUDA module launches")
        extra = f" + {launches:.2f} profiler" if launches else ""
        parts.append(f"{case['case_id'].split('::')[-1]} {spent.get('compiled kernels', 0):.2f}{extra}")
    return f"{results.stem}: compiled-kernel recording per case (s): {', '.join(parts)}"


def step_crosscheck(limit_s: float) -> None:
    env = lab.env_with(**caches("cold"))
    COMPILED_OUT.mkdir(parents=True, exist_ok=True)
    out = COMPILED_OUT / "crosscheck.json"
    argv = [sys.executable, str(Path(__file__).resolve()), "--crosscheck", str(out)]
    code, wall, text = lab.timed("crosscheck", argv, lab.ROOT, env, limit_s)
    for line in text.splitlines():
        if line.startswith("crosscheck"):
            say(line)
    say(f"crosscheck: exit {code}, {wall:.1f} s")


def with_facts(baseline: Path, results: Path, out: Path) -> None:
    """The committed baseline (its calibration kept) with the compiled facts of a gate's JSON results."""
    from dataclasses import replace

    from perfgate.baseline import load_baseline
    from perfgate.baseline.write import render_baseline
    from perfgate.compiled.codec import from_dict

    base = load_baseline(baseline)
    assert base is not None
    doc = json.loads(results.read_text())
    facts = {c["case_id"]: from_dict(c["compiled"]) for c in doc["cases"] if c.get("compiled")}
    cases = {cid: replace(c, compiled=facts.get(cid)) for cid, c in base.cases.items()}
    out.write_text(render_baseline(replace(base, cases=cases, path=out)))


def step_static(baseline: Path, limit_s: float, started: float) -> None:
    """The de-tuned kernels first (the must-be-shown failure), the unchanged ones only while time is left."""
    facts = SCRATCH / "baseline_with_facts.json"
    results = newest_results()
    with_facts(baseline, results, facts)
    # no confirmation rounds on any GPU: the static rows are exact, the de-tuned timings would only be confirmed
    args = ("-k", "matmul or rms_norm", f"--perfgate-baseline-file={facts}", "--perfgate-allow-env-mismatch")
    args += ("--perfgate-confirm-runs=0",)
    detuned = lab.env_with(**caches("cold"), KERNELS_DETUNE="matmul,rms_norm")
    code, wall, text = run_gate("static_detuned", detuned, limit_s, *args)
    say(f"static gate, KERNELS_DETUNE=matmul,rms_norm (facts from {results.name}): exit {code}, {wall:.1f} s")
    for line in interesting(text):
        say(f"  {line}")
    left = limit_s - (time.monotonic() - started)
    if left < 40:
        say(f"static gate, unchanged matmul and rms_norm: skipped ({left:.0f} s of this step's time left)")
        return
    code, wall, text = run_gate("static_unchanged", lab.env_with(**caches("cold")), left, *args)
    static = [line for line in text.splitlines() if "(static" in line]
    say(f"static gate, unchanged matmul and rms_norm: exit {code}, {wall:.1f} s, {len(static)} static row(s)")


# a reciprocal and a multiply instead of a division: the same result within the tolerances, other SASS (checked
# on the host with Triton's ptxas for sm_90); `tl.exp2(x * log2(e))` would not do: tl.exp compiles to it already
SOFTMAX_CHANGE = ("    out = e / tl.sum(e, axis=0)\n", "    out = e * (1.0 / tl.sum(e, axis=0))\n")


def step_ab(limit_s: float) -> None:
    repo = lab.new_project(SCRATCH / "ab")
    path = repo / "kernels" / "softmax_kernel.py"
    text = path.read_text()
    assert SOFTMAX_CHANGE[0] in text, "the softmax kernel changed: update SOFTMAX_CHANGE"
    lab.commit(repo, "softmax: reciprocal", {"kernels/softmax_kernel.py": text.replace(*SOFTMAX_CHANGE)})
    env = lab.env_with(**caches("cold"))  # warm by now: both trees use what the checkout built (content keys)
    worktrees = SCRATCH / "worktrees"
    code, wall, doc = lab.perfgate_ab("ab_skip", repo, "HEAD~1", [SUITE], worktrees, env, limit_s)
    rows = [c for c in doc.get("comparisons", []) if c["metric"] == "median_ms"]
    same = [c["case_id"].split("::")[-1] for c in rows if "same code" in (c.get("note") or "")]
    measured = [
        f"{c['case_id'].split('::')[-1]} {c['verdict']}" for c in rows if "same code" not in (c.get("note") or "")
    ]
    say(f"A/B, head changes softmax only: exit {code}, {wall:.1f} s; unchanged (same code): {', '.join(same)}")
    say(f"A/B measured: {', '.join(measured)}")
    log_text = (lab.LOGS / "ab_skip.log").read_text()
    for line in log_text.splitlines():
        if "same code" in line and line.startswith("perfgate") or line.startswith("perfgate: A/B cost"):
            say(f"  {line}")


# --- the cross-check, in a process of its own --------------------------------------------------------------

CU_ATTRS = {"max_threads": 0, "shared_size_bytes": 1, "local_size_bytes": 3, "num_regs": 4}


def driver_facts(cuda: Any, function: int, threads: int, dynamic: int) -> dict[str, int]:
    import ctypes

    out = {}
    for name, attr in CU_ATTRS.items():
        value = ctypes.c_int()
        assert cuda.cuFuncGetAttribute(ctypes.byref(value), attr, ctypes.c_void_p(function)) == 0
        out[name] = value.value
    blocks = ctypes.c_int()
    status = cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(blocks), ctypes.c_void_p(function), ctypes.c_int(threads), ctypes.c_size_t(dynamic)
    )
    out["occupancy_blocks"] = blocks.value if status == 0 else -status
    return out


def crosscheck(out: Path) -> None:
    import ctypes

    import torch

    sys.path.insert(0, str(lab.ROOT))
    import kernels
    from perfgate.compiled.occupancy import arch_of
    from perfgate.compiled.record import KernelRecorder

    cuda = ctypes.CDLL("libcuda.so.1")
    major, minor = torch.cuda.get_device_capability()
    recorder = KernelRecorder.for_device(arch_of(f"{major}.{minor}"))
    r = lambda *s, dtype=torch.bfloat16: torch.randn(*s, device="cuda", dtype=dtype)  # noqa: E731
    x16, w = r(16384, 8192), r(8192)
    big = lambda: r(1 << 27, dtype=torch.float32)  # noqa: E731
    calls = {
        "vector_add": (kernels.vector_add, (big(), big())),
        "mul_add": (kernels.mul_add, (big(), big(), big())),
        "fused_add_gelu": (kernels.fused_add_gelu, (x16, w)),
        "softmax_bf16": (kernels.softmax, (x16,)),
        "softmax_fp32": (kernels.softmax, (x16.float(),)),
        "layer_norm": (kernels.layer_norm, (x16, w, r(8192))),
        "matmul": (kernels.matmul, (r(4096, 4096), r(4096, 4096))),
        "flash_attention": (kernels.flash_attention, (r(4, 32, 4096, 128), r(4, 32, 4096, 128), r(4, 32, 4096, 128))),
        "rms_norm": (kernels.rms_norm, (x16, w)),
    }
    rows: list[dict] = []
    for name, (fn, args) in calls.items():
        try:
            rows += _case_crosscheck(name, fn, args, recorder, cuda, out.parent)
        except Exception as err:  # one case's failure must not lose the others'
            print(f"crosscheck {name}: failed: {type(err).__name__}: {err}", flush=True)
        out.write_text(json.dumps(rows, indent=1, sort_keys=True, default=str) + "\n")
        torch.cuda.empty_cache()


def _case_crosscheck(name: str, fn: Any, args: tuple, recorder: Any, cuda: Any, where: Path) -> list[dict]:
    import torch

    from perfgate.compiled.triton_kernels import facts

    fn(*args)  # compile, autotune, build
    torch.cuda.synchronize()
    seen = recorder.watch(lambda: fn(*args), args, {})
    rows = []
    for launch in seen.triton:
        k = facts(launch.kernel, launch.grid, recorder._read, recorder.limits)
        threads = k.num_warps * 32
        drv = driver_facts(cuda, launch.kernel.function, threads, k.dynamic_shared_bytes or 0)
        rows.append(_row(name, k, drv, n_spills=launch.kernel.n_spills))
    if seen.modules:
        rows += _module_crosscheck(name, recorder, seen, lambda: fn(*args), cuda, where)
    return rows


def _row(case: str, k: Any, drv: dict, **extra: object) -> dict:
    ours = k.occupancy.blocks_per_sm if k.occupancy else None
    match = bool(drv) and ours == drv.get("occupancy_blocks") and k.registers_per_thread == drv.get("num_regs")
    print(
        f"crosscheck {case} {k.name[:70]}: registers {k.registers_per_thread} (driver {drv.get('num_regs')}), "
        f"stack {k.stack_bytes_per_thread} (driver local {drv.get('local_size_bytes')}), static shared "
        f"{k.static_shared_bytes} (driver {drv.get('shared_size_bytes')}), block {k.block}, dynamic "
        f"{k.dynamic_shared_bytes}, blocks/SM {ours} (occupancy API {drv.get('occupancy_blocks')}), "
        f"{'MATCH' if match else 'MISMATCH'}",
        flush=True,
    )
    return {"case": case, "kernel": k.name, "perfgate": _plain(k), "driver": drv, "match": match, **extra}


def _module_crosscheck(case: str, recorder: Any, seen: Any, call: Any, cuda: Any, where: Path) -> list[dict]:
    """The CUDA C++ kernels: perfgate's record (with CUPTI's launches) against the driver's attributes of the
    cubin the driver runs on this GPU (perfgate's choice, cubin.runnable_arch), loaded with cuModuleLoadData;
    torch.profiler's trace kept for tests/data."""
    import ctypes

    import torch
    from torch.profiler import ProfilerActivity, profile

    from perfgate.compiled.cubin import cubin_arch, extract_cubins, runnable_arch
    from perfgate.compiled.launch_hook import LaunchHookUnavailable, hooked_launches

    try:
        started = time.perf_counter()
        hooked = hooked_launches(call)
        took = time.perf_counter() - started
        print(f"crosscheck {case}: CUPTI launch callbacks in {took:.3f} s: {hooked}", flush=True)
    except LaunchHookUnavailable as err:
        print(f"crosscheck {case}: CUPTI launch callbacks unavailable: {err}", flush=True)
    case_record = recorder.compiled(seen, call)
    for note in case_record.notes:
        print(f"crosscheck {case} note: {note}", flush=True)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(where / f"{case}_torch_trace.json"))
    rows = []
    for path in seen.modules:
        cubins = extract_cubins(path, recorder.reader.cuobjdump)
        chosen = runnable_arch([cubin_arch(n) for n in cubins], recorder.arch)
        print(f"crosscheck {case}: {path.name} carries {', '.join(sorted(cubins))}; runs {chosen}", flush=True)
        for name, data in cubins.items():
            if cubin_arch(name) != chosen:
                continue
            module = ctypes.c_void_p()
            assert cuda.cuModuleLoadData(ctypes.byref(module), data) == 0
            symbols = {c.name for c in recorder.reader.cubin(data)}
            readable = recorder._demangled(sorted(symbols))
            for k in case_record.kernels:
                mangled = next((m for m, text in readable.items() if text == k.name), None)
                if k.source.value != "cuda module" or mangled is None:
                    continue
                function = ctypes.c_void_p()
                status = cuda.cuModuleGetFunction(ctypes.byref(function), module, mangled.encode())
                threads = k.threads_per_block or 0
                drv = (
                    driver_facts(cuda, function.value or 0, threads, k.dynamic_shared_bytes or 0) if status == 0 else {}
                )
                rows.append(_row(case, k, drv, cubin=name))
    return rows


def _plain(k: Any) -> dict:
    from perfgate.compiled.codec import to_dict
    from perfgate.compiled.records import CompiledCase

    return to_dict(CompiledCase((k,), ""))["kernels"][0]


# --- the session ------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-s", type=float, default=290.0)
    parser.add_argument("--crosscheck", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--steps", default="", help="comma-separated step names to run (default: all)")
    args = parser.parse_args()
    wanted = {s.strip() for s in args.steps.split(",") if s.strip()}
    if args.crosscheck:
        crosscheck(args.crosscheck)
        return
    started = time.monotonic()
    lab.check_tools()
    SCRATCH.mkdir(parents=True, exist_ok=True)
    device = pick_gpu()
    gpu = subprocess.run(
        ["nvidia-smi", "-i", device, "--query-gpu=name,driver_version", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    h100 = bool(re.search(r"H100 80GB HBM3", gpu))
    if not h100:
        GATE_ARGS.extend(OTHER_GPU_ARGS)
        note = (
            ": not the H100 the committed baseline is for: timing gates compared with it anyway, with no "
            "confirmation rounds (--perfgate-confirm-runs=0), so their wall time is the cold start's; the "
            "static facts are the same on any sm_90 GPU"
        )
    else:
        note = ""
    say(f"GPU {device}: {gpu}{note}")
    # (name, seconds it needs to be worth starting, its time limit, the step)
    steps: tuple[tuple[str, float, float, Any], ...] = (
        ("cold gate", 40, 110, step_cold),
        ("warm gate", 20, 60, step_warm),
        ("static gate", 40, 90, lambda limit: step_static(lab.ROOT / H100, limit, time.monotonic())),
        ("A/B", 45, 110, step_ab),
        ("restored gate", 25, 60, step_restored),
        ("cross-check", 20, 30, step_crosscheck),
    )
    for name, needs, limit, step in steps:
        if wanted and name.split()[0] not in wanted:
            continue
        left = args.budget_s - (time.monotonic() - started)
        if left < needs:
            say(f"{name}: skipped, {left:.0f} s of the budget left (needs ~{needs:.0f} s)")
            continue
        try:
            step(min(limit, left - 5))
        except Exception as err:  # one broken step must not lose the others' results
            say(f"{name}: failed: {type(err).__name__}: {err}")
        write_summary(started)  # after every step: a session cut short keeps what it had
    say(f"session: {time.monotonic() - started:.0f} s")
    write_summary(started)


def write_summary(started: float) -> None:
    elapsed = f"(after {time.monotonic() - started:.0f} s)"
    lab.write_summary([f"# kernels session (issue 34) {elapsed}", "", *(f"- {line}" for line in SUMMARY)])


if __name__ == "__main__":
    main()
