"""How often does the gate raise a false alarm, and how often does it catch a slowdown? Measured per case and
per run, over several independent calibrations.

    python scripts/accuracy.py run gpu  OUT [--calibration-runs 24] [--aa-runs 20] [--inject-runs 6] [--levels 3,5]
    python scripts/accuracy.py run host OUT [--calibration-runs 12] [--aa-runs 20] [--inject-runs 10] [--levels 20]
    python scripts/accuracy.py report OUT          # the tables again, from the saved measurements

Every process is a fresh `pytest --perfgate` measuring scripts/accuracy/test_accuracy_cases.py (perfgate's
measurement children, measure/processes.py): first the calibration processes, then processes that
measure every case at every injected level (a spin after the work for L% of its time), then the A/A
processes (nothing injected). Scoring uses perfgate's own gate code (`with_noise`, `compare_run`,
`confirm_suspects`) with its shipped settings:

- the calibration processes are split into independent calibrations of --calibration-size (6) processes,
  each a calibrated baseline of its own;
- a gate run is one A/A process with every case in it (the run's false-alarm budget divided over them);
  its noise window is the A/A processes before it (up to `noise_window`), its confirmation process the
  next one: a run fails when any gated case fails, exactly as the gate decides;
- an injected trial is one injected process at one level, against each calibration, with the next
  injected process at that level as its confirmation and every A/A process as its window.
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
from perfgate.baseline.write import calibrated_baseline  # noqa: E402
from perfgate.codec import case_from_dict, case_to_dict  # noqa: E402
from perfgate.config.settings import Settings  # noqa: E402
from perfgate.errors import PerfgateError  # noqa: E402
from perfgate.gate.compare import compare_run  # noqa: E402
from perfgate.gate.confirm import confirm_suspects  # noqa: E402
from perfgate.gate.window import WindowValues, with_noise  # noqa: E402
from perfgate.model import CaseResult, GateResult, Run, RunInfo  # noqa: E402

SETTINGS = Settings()  # the shipped defaults

CASES_FILE = "scripts/accuracy/test_accuracy_cases.py"
CASE_ID = re.compile(r"^(?P<test>.*test_case\[)(?P<case>.+)-(?P<level>[0-9.]+)\]$")


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
        doc = {
            "environment": child.environment.__dict__ if child.environment else None,
            "results": [case_to_dict(r) for r in child.results],
        }
        (kind_dir / f"{label}_{i:03d}.json").write_text(json.dumps(doc))
        print(f"{label} {i + 1}/{runs}: {len(child.results)} case(s)", file=sys.stderr, flush=True)


def load_runs(out: Path, label: str) -> list[Run]:
    from perfgate.codec import environment_from_dict

    runs = []
    for path in sorted(out.glob(f"{label}_*.json")):
        doc = json.loads(path.read_text())
        runs.append(
            Run(
                RunInfo("", ""),
                environment_from_dict(doc["environment"]),
                tuple(case_from_dict(d) for d in doc["results"]),
            )
        )
    return runs


def split(case_id: str) -> tuple[str, str, float]:
    m = CASE_ID.match(case_id)
    if not m:
        raise ValueError(case_id)
    return m["case"], f"{m['test']}{m['case']}-0]", float(m["level"])


def at_level(run: Run, level: float) -> Run:
    """The run's results at one injected level, relabelled as the level-0 case they slow down."""
    kept = tuple(replace(r, case_id=split(r.case_id)[1]) for r in run.results if split(r.case_id)[2] == level)
    return replace(run, results=kept)


def calibrations(calibration: list[Run], size: int) -> list[Baseline]:
    groups = [calibration[i : i + size] for i in range(0, len(calibration) - size + 1, size)]
    return [calibrated_baseline(None, g, Path("baseline.json"), "accuracy", "accuracy", SETTINGS) for g in groups]


def gate(run: Run, baseline: Baseline, window: list[Run], confirmations: list[Run]) -> GateResult:
    """The gate's verdicts for `run`: noise from the baseline and the window, suspects confirmed by the
    given processes in order."""
    windows = {
        r.case_id: WindowValues(
            tuple(w_r.timing.median_ms for w in window for w_r in w.results if w_r.case_id == r.case_id),
            tuple(
                w_r.speedup.median
                for w in window
                for w_r in w.results
                if w_r.case_id == r.case_id and w_r.speedup is not None
            ),
        )
        for r in run.results
    }
    run = replace(run, results=with_noise(run.results, baseline, SETTINGS, windows))
    queue = iter(confirmations)

    def confirmer(ids: object) -> dict[str, CaseResult]:
        nxt = next(queue, None)
        if nxt is None:
            raise PerfgateError("no more processes to confirm with")
        return {r.case_id: r for r in nxt.results}

    run = confirm_suspects(run, baseline, SETTINGS, confirmer, [])
    return compare_run(run.results, baseline, run.environment, SETTINGS, intervals=False)


def failed_cases(result: GateResult) -> set[str]:
    return {c.case_id for c in result.comparisons if c.gated and c.verdict in result.fail_on}


def score(out: Path, size: int) -> dict[str, object]:
    """Per calibration: gate runs on A/A processes and how many failed; per case and level: caught/trials."""
    baselines = calibrations(load_runs(out, "calibration"), size)
    aa = [at_level(r, 0.0) for r in load_runs(out, "aa")]
    injected = load_runs(out, "injected")
    levels = sorted({split(r.case_id)[2] for run in injected for r in run.results} - {0.0})
    per_run, per_case = [], defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for k, baseline in enumerate(baselines):
        failures = 0
        for t, run in enumerate(aa):
            bad = failed_cases(gate(run, baseline, aa[max(0, t - SETTINGS.noise_window) : t], aa[t + 1 :] + aa[:t]))
            failures += bool(bad)
            for r in run.results:
                counts = per_case[split(r.case_id)[0]][0.0]
                counts[0] += r.case_id in bad
                counts[1] += 1
        per_run.append((k, failures, len(aa)))
        for level in levels:
            trials = [at_level(r, level) for r in injected]
            for t, run in enumerate(trials):
                bad = failed_cases(gate(run, baseline, aa, trials[t + 1 :] + trials[:t]))
                for r in run.results:
                    counts = per_case[split(r.case_id)[0]][level]
                    counts[0] += r.case_id in bad
                    counts[1] += 1
    return {"per_run": per_run, "per_case": per_case, "levels": [0.0, *levels]}


def render(table: dict[str, object], out: Path) -> str:
    per_run = table["per_run"]
    per_case = table["per_case"]
    levels = table["levels"]
    assert isinstance(per_run, list) and isinstance(per_case, dict) and isinstance(levels, list)
    lines = [f"Measurements: {out}", "", "| calibration | unchanged gate runs | failed runs |", "|---|---:|---:|"]
    lines += [f"| {k + 1} | {n} | {f} |" for k, f, n in per_run]
    lines += [
        "",
        "| case | " + " | ".join("A/A false alarms" if lvl == 0 else f"{lvl:g}% caught" for lvl in levels) + " |",
        "|---|" + "---:|" * len(levels),
    ]
    totals = defaultdict(lambda: [0, 0])
    for case in sorted(per_case):
        cells = []
        for lvl in levels:
            flagged, n = per_case[case].get(lvl, (0, 0))
            totals[lvl][0] += flagged
            totals[lvl][1] += n
            cells.append(f"{flagged}/{n}")
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    lines.append("| **all** | " + " | ".join(f"{totals[lvl][0]}/{totals[lvl][1]}" for lvl in levels) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("where", choices=("gpu", "host"))
    run.add_argument("out", type=Path)
    run.add_argument("--calibration-runs", type=int, default=24, help="split into calibrations of --calibration-size")
    run.add_argument("--aa-runs", type=int, default=20)
    run.add_argument("--inject-runs", type=int, default=6)
    run.add_argument("--levels", default="3,5")
    run.add_argument("--deadline-s", type=float, help="start no A/A process after this many seconds")
    rep = sub.add_parser("report")
    rep.add_argument("out", type=Path)
    for p in (run, rep):
        p.add_argument("--calibration-size", type=int, default=6, help="processes per independent calibration")
    args = parser.parse_args()
    if args.command == "run":
        import time

        deadline = time.monotonic() + args.deadline_s if args.deadline_s else None
        run_children(args.out, args.calibration_runs, "0", "calibration")
        run_children(args.out, args.inject_runs, args.levels, "injected")
        run_children(args.out, args.aa_runs, "0", "aa", deadline)
    text = render(score(args.out, args.calibration_size), args.out)
    print(text)
    (args.out / "accuracy.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
