"""The mutation campaign over real recorded files, judged by the invariant oracle (tests/campaign.py).

    nice python scripts/mutation_campaign.py [--per-reader 5000] [--readers nsys-sqlite,ncu-csv,...]
                                             [--kinds structural,semantic] [--first-seed 0] [--timeout 60]
                                             [--out table.md]

Every input is a real file (nsys export, ncu report or CSV, torch trace, pytest-benchmark JSON, perfgate
results, child output, baseline) mutated: damaged (tests/mutations.py, "structural") or changed in meaning
(tests/semantic.py, "semantic": other producers' schemas, locale numbers, duplicated ids, contradictory
statistics, impossible physics, each judged by what a true reading is); each runs in a worker process with
a deadline, so hangs and native aborts are counted, not fatal. Prints the per-reader table for
docs/robustness.md and the first seeds of every finding; exit 1 when any reader has a traceback, silent-wrong
result, hang or abort. Seeds are deterministic: `--first-seed` lets a long run be spread over several sittings.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.campaign import READERS, SEMANTIC_SUFFIX, Tally, run_campaign  # noqa: E402
from tests.semantic import SEMANTIC  # noqa: E402

COLUMNS = ("read", "clean error", "traceback", "silent-wrong", "hang", "native abort")


def render(tallies: list[Tally]) -> str:
    lines = ["| reader | inputs | " + " | ".join(COLUMNS) + " | time |", "|---|" + "---:|" * (len(COLUMNS) + 2)]
    for t in tallies:
        cells = " | ".join(str(t.outcomes[c]) for c in COLUMNS)
        lines.append(f"| {t.reader} | {sum(t.outcomes.values())} | {cells} | {t.seconds:.0f} s |")
    total = {c: sum(t.outcomes[c] for t in tallies) for c in COLUMNS}
    lines.append(
        f"| **all** | {sum(sum(t.outcomes.values()) for t in tallies)} | "
        + " | ".join(str(total[c]) for c in COLUMNS)
        + f" | {sum(t.seconds for t in tallies):.0f} s |"
    )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-reader", type=int, default=5000)
    parser.add_argument("--readers", default=",".join(READERS), help="base readers (semantic ones follow --kinds)")
    parser.add_argument("--kinds", default="structural,semantic", help="structural, semantic or both")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before an input counts as a hang")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    tallies = []
    kinds = set(args.kinds.split(","))
    names = [r for r in args.readers.split(",") if "structural" in kinds] + [
        r + SEMANTIC_SUFFIX for r in args.readers.split(",") if "semantic" in kinds and r in SEMANTIC
    ]
    for reader in names:
        seeds = range(args.first_seed, args.first_seed + args.per_reader)
        tally = run_campaign(reader, seeds, args.timeout, progress=lambda m: print(m, file=sys.stderr, flush=True))
        print(f"{reader}: {dict(tally.outcomes)} in {tally.seconds:.0f} s", file=sys.stderr, flush=True)
        tallies.append(tally)
    text = render(tallies)
    findings = [
        f"- {t.reader}: {site}: {len(seeds)}x, seeds {seeds[:5]}"
        for t in tallies
        for site, seeds in sorted(t.sites.items())
    ]
    if findings:
        text += "\nFindings (outcome: site: count, first seeds):\n" + "\n".join(findings) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 1 if any(t.failures for t in tallies) else 0


if __name__ == "__main__":
    raise SystemExit(main())
