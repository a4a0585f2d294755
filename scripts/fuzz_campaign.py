"""The long fuzz campaign: thousands of generated bad inputs through every reader perfgate has (the same
generators as tests/test_fuzz.py), counted per input kind.

    python scripts/fuzz_campaign.py [--per-kind 800] [--kinds baseline,history,...] [--seed 0] [--timeout 20]

An input ends as `ok` (read), `clean error` (one PerfgateError line naming the file), `traceback` (any
other exception: a crash site, listed with the first few seeds that reach it) or `hang` (the reader ran
past --timeout). Want: tracebacks 0, hangs 0. Native crashes of NVIDIA's ncu_report happen in a child
process by design and count as clean errors when perfgate reports them as one.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzzing import KINDS, check  # noqa: E402


class Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise Hang()


def crash_site(err: BaseException) -> str:
    """The innermost frame in perfgate's own code (else the innermost frame), with the exception type."""
    frames = traceback.extract_tb(err.__traceback__)
    ours = [f for f in frames if "/perfgate/" in f.filename.replace("\\", "/")]
    f = (ours or frames or [None])[-1]
    where = f"{Path(f.filename).name}:{f.lineno} in {f.name}" if f else "?"
    return f"{type(err).__name__} at {where}"


def run_kind(name: str, count: int, seed: int, timeout_s: int) -> tuple[Counter[str], dict[str, list[int]]]:
    kind = KINDS[name]
    outcomes: Counter[str] = Counter()
    sites: dict[str, list[int]] = defaultdict(list)
    for i in range(count):
        case_seed = seed * 1_000_003 + i
        with tempfile.TemporaryDirectory(prefix=f"fuzz-{name}-") as tmp:
            try:
                value = kind.make(random.Random(case_seed), Path(tmp))
            except Exception as err:  # noqa: BLE001 - a generator bug is reported, not counted as perfgate's
                outcomes["generator error"] += 1
                sites[f"generator: {crash_site(err)}"].append(case_seed)
                continue
            signal.alarm(timeout_s)
            try:
                outcomes[check(kind, value)] += 1
            except Hang:
                outcomes["hang"] += 1
                sites["hang"].append(case_seed)
            except BaseException as err:  # noqa: BLE001 - every escape is a finding
                outcomes["traceback"] += 1
                sites[crash_site(err)].append(case_seed)
            finally:
                signal.alarm(0)
    return outcomes, sites


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-kind", type=int, default=800)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=int, default=20, help="seconds before an input counts as a hang")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, _alarm)
    rows, all_sites = [], {}
    started = time.monotonic()
    for name in args.kinds.split(","):
        t0 = time.monotonic()
        outcomes, sites = run_kind(name, args.per_kind, args.seed, args.timeout)
        rows.append(
            (
                name,
                sum(outcomes.values()),
                outcomes["ok"],
                outcomes["clean error"],
                outcomes["traceback"],
                outcomes["hang"],
                outcomes["generator error"],
                time.monotonic() - t0,
            )
        )
        all_sites.update({f"{name}: {k}": v for k, v in sites.items()})
        print(f"{name}: {dict(outcomes)} in {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    print("| input kind | tried | read | clean error | traceback | hang | generator error | time |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, tried, ok, clean, tb, hang, gen, secs in rows:
        print(f"| {name} | {tried} | {ok} | {clean} | {tb} | {hang} | {gen} | {secs:.0f} s |")
    totals = [sum(r[i] for r in rows) for i in range(1, 7)]
    print(
        f"| **all** | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} | {totals[4]} | {totals[5]} | "
        f"{time.monotonic() - started:.0f} s |"
    )
    if all_sites:
        print("\nFindings (site: first seeds):")
        for site, seeds in sorted(all_sites.items()):
            print(f"- {site}: {len(seeds)}x, seeds {seeds[:5]}")
    return 1 if totals[3] or totals[4] else 0


if __name__ == "__main__":
    raise SystemExit(main())
