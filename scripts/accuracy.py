"""How often does the gate raise a false alarm, and how often does it catch a slowdown? Measured, per case.

    python scripts/accuracy.py run gpu  OUT [--calibration-runs 6] [--aa-runs 25] [--inject-runs 8] [--levels 2,3,5,10]
    python scripts/accuracy.py run host OUT [--calibration-runs 6] [--aa-runs 20] [--inject-runs 10] [--levels 20]
    python scripts/accuracy.py report OUT          # the tables again, from the saved measurements

Every process is a fresh `pytest --perfgate` measuring scripts/accuracy/test_accuracy_cases.py (perfgate's
measurement children, measure/children.py): first the calibration processes (the baseline), then the
A/A processes (nothing injected), then processes that measure every case at every injected level (a
spin after the work for L% of its time). The verdicts come from perfgate's own gate code: for each
trial (one process, one case, one level) `compare_run` against the baseline, with `confirm_suspects`
drawing its confirmation medians from the next fresh processes of the same level, exactly as the gate
would re-measure in new processes. A trial is caught when its time or (for cases with a reference) its
speedup ends regressed.

Two rules are scored on the same measurements:
- now: the calibrated baseline (all calibration processes), between-process noise, confirmation;
- before: the first version's rule: one baseline process, Mann-Whitney p < 0.01 and the change beyond
  3% (10% for matmul, 8% for attention: its hand-set overrides), no confirmation.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfgate.baseline import Baseline  # noqa: E402
from perfgate.baseline.write import calibrated_baseline, updated_baseline  # noqa: E402
from perfgate.codec import case_from_dict, case_to_dict  # noqa: E402
from perfgate.config.settings import Settings  # noqa: E402
from perfgate.gate.compare import compare_run, decision_settings  # noqa: E402
from perfgate.gate.run import confirm_suspects  # noqa: E402
from perfgate.model import CaseThresholds, Run, RunInfo, Verdict  # noqa: E402

CASES_FILE = "scripts/accuracy/test_accuracy_cases.py"
CASE_ID = re.compile(r"^(?P<test>.*test_case\[)(?P<case>.+)-(?P<level>[0-9.]+)\]$")
OLD_THRESHOLDS = {"matmul": 10.0, "attention": 8.0}


def run_children(kind_dir: Path, runs: int, levels: str, label: str, deadline: float | None = None) -> None:
    import os
    import time

    from perfgate.measure.processes import ChildRunner

    os.environ["PERFGATE_ACCURACY_LEVELS"] = levels
    runner = ChildRunner(ROOT, Settings())
    kind_dir.mkdir(parents=True, exist_ok=True)
    for i in range(runs):
        if deadline is not None and time.monotonic() > deadline:
            print(f"{label}: out of time after {i} process(es)", file=sys.stderr, flush=True)
            return
        child = runner.run(["-p", "no:randomly", CASES_FILE])
        if child.returncode != 0:
            raise SystemExit(f"{label} process {i}: pytest exited {child.returncode}")
        doc = {"environment": child.environment.__dict__ if child.environment else None,
               "results": [case_to_dict(r) for r in child.results]}
        (kind_dir / f"{label}_{i:03d}.json").write_text(json.dumps(doc))
        print(f"{label} {i + 1}/{runs}: {len(child.results)} case(s)", file=sys.stderr, flush=True)


def load_runs(out: Path, label: str) -> list[Run]:
    from perfgate.codec import environment_from_dict

    runs = []
    for path in sorted(out.glob(f"{label}_*.json")):
        doc = json.loads(path.read_text())
        runs.append(Run(RunInfo("", ""), environment_from_dict(doc["environment"]),
                        tuple(case_from_dict(d) for d in doc["results"])))
    return runs


def split(case_id: str) -> tuple[str, str, float]:
    m = CASE_ID.match(case_id)
    if not m:
        raise ValueError(case_id)
    return m["case"], f"{m['test']}{m['case']}-0]", float(m["level"])


def baselines(calibration: list[Run]) -> tuple[Baseline, Baseline]:
    """now: calibrated from every calibration process; before: the first process alone, uncalibrated."""
    path = Path("baseline.json")
    now = calibrated_baseline(None, calibration, path, "accuracy", "accuracy", decision_settings(Settings()))
    before = updated_baseline(None, calibration[0], path, "accuracy", "accuracy")
    return now, before


def trials(runs: list[Run], level: float) -> dict[str, list[list[float] | object]]:
    """Per base case id: the results at `level`, one per process, in process order."""
    out: dict[str, list[object]] = defaultdict(list)
    for run in runs:
        for r in run.results:
            case, base_id, lvl = split(r.case_id)
            if lvl == level:
                out[base_id].append(replace(r, case_id=base_id))
    return out  # type: ignore[return-value]


def verdict(result: object, baseline: Baseline, env: object, settings: Settings, others: list[object]) -> Verdict:
    run = Run(RunInfo("", ""), env, (result,))  # type: ignore[arg-type]
    queue = iter(others)

    def confirmer(ids: object) -> dict[str, object]:
        nxt = next(queue)
        return {nxt.case_id: nxt}  # type: ignore[attr-defined]

    if settings.confirm_runs:
        run = confirm_suspects(run, baseline, settings, confirmer, [])
    gate = compare_run(run.results, baseline, run.environment, settings, intervals=False)
    verdicts = [c.verdict for c in gate.comparisons if c.metric in ("median_ms", "speedup")]
    return Verdict.REGRESSED if Verdict.REGRESSED in verdicts else verdicts[0]


def score(out: Path) -> dict[str, dict[str, dict[float, tuple[int, int]]]]:
    """{rule: {case: {level: (flagged, trials)}}}; flagged = REGRESSED after the rule's confirmation."""
    calibration = load_runs(out, "calibration")
    now, before = baselines(calibration)
    env = calibration[0].environment
    table: dict[str, dict[str, dict[float, tuple[int, int]]]] = {"now": defaultdict(dict), "before": defaultdict(dict)}
    groups = {0.0: load_runs(out, "aa")}
    injected = load_runs(out, "injected")
    levels = sorted({split(r.case_id)[2] for run in injected for r in run.results} - {0.0})
    for level in levels:
        groups[level] = injected
    for level, runs in groups.items():
        for base_id, results in trials(runs, level).items():
            case = split(base_id)[0]
            old_pct = next((v for k, v in OLD_THRESHOLDS.items() if k in case), 3.0)
            for rule, baseline, settings in (("now", now, Settings()), ("before", before, Settings(confirm_runs=0))):
                flagged = 0
                for t, measured in enumerate(results):
                    result = measured if rule == "now" else \
                        replace(measured, thresholds=CaseThresholds(time_pct=old_pct))  # type: ignore[type-var]
                    others = results[t + 1:] + results[:t]
                    flagged += verdict(result, baseline, env, settings, others) is Verdict.REGRESSED
                table[rule][case][level] = (flagged, len(results))
    return table


def render(table: dict[str, dict[str, dict[float, tuple[int, int]]]], out: Path) -> str:
    now = table["now"]
    levels = sorted({lvl for case in now.values() for lvl in case})
    head = "| case | " + " | ".join("A/A false alarms" if lvl == 0 else f"{lvl:g}% caught" for lvl in levels) + " |"
    lines = [f"Measurements: {out}", "", "Each cell: now (calibrated, confirmed) / before (first rule).", "", head,
             "|---|" + "---:|" * len(levels)]
    totals: dict[str, dict[float, list[int]]] = {r: defaultdict(lambda: [0, 0]) for r in table}
    for case in sorted(now):
        cells = []
        for lvl in levels:
            parts = []
            for rule in ("now", "before"):
                flagged, n = table[rule][case].get(lvl, (0, 0))
                totals[rule][lvl][0] += flagged
                totals[rule][lvl][1] += n
                parts.append(f"{flagged}/{n}")
            cells.append(" / ".join(parts))
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    lines.append("| **all** | " + " | ".join(" / ".join(f"{totals[r][lvl][0]}/{totals[r][lvl][1]}" for r in ("now",
                                                                                                             "before"))
                                           for lvl in levels) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("where", choices=("gpu", "host"))
    run.add_argument("out", type=Path)
    run.add_argument("--calibration-runs", type=int, default=6)
    run.add_argument("--aa-runs", type=int, default=25)
    run.add_argument("--inject-runs", type=int, default=8)
    run.add_argument("--levels", default="2,3,5,10")
    run.add_argument("--deadline-s", type=float, help="start no A/A process after this many seconds")
    rep = sub.add_parser("report")
    rep.add_argument("out", type=Path)
    args = parser.parse_args()
    if args.command == "run":
        import time

        deadline = time.monotonic() + args.deadline_s if args.deadline_s else None
        run_children(args.out, args.calibration_runs, "0", "calibration")
        run_children(args.out, args.inject_runs, args.levels, "injected")
        run_children(args.out, args.aa_runs, "0", "aa", deadline)
    text = render(score(args.out), args.out)
    print(text)
    (args.out / "accuracy.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
