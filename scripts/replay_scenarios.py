"""The outside statistics review's scenarios, replayed on the SHIPPED gate with a real SQLite history.

    python scripts/replay_scenarios.py [--calibrations 6] [--scenario NAME ...] [--calibration-processes N]
                                       [--first C] [--follow-note] [--trace] [--json OUT]

Each scenario is a suite of simulated cases whose process values follow a noise model (Gaussian, a second
mode, heavy tails) and an environment over time (a driver update, a new mode, machine drift) and, for the
code scenarios, a change to one case (a creep, a step). For every independent calibration:

1. `perfgate calibrate`'s baseline: `calibrated_baseline` over as many simulated processes as `perfgate
   calibrate` takes without --runs for the suite's size (baseline/calibrate.py processes_for: 10 up to 437
   cases, 12 at 1,000), or `--calibration-processes N` (6: the README's command before issue 31's sizing);
2. then one gate run per commit on `main`, each through `perfgate.gate.run.run_gate`, the function
   `pytest --perfgate` calls: the noise window read from the SQLite history (store/window.py), suspects
   re-measured by a confirmer that draws fresh processes (gate/confirm.py), the verdicts, the findings
   (common-mode shift, change points from trends/), the run stored with its verdicts;
3. the user's policy: when three of the last five runs named a common-mode shift, the first of them
   included (a shift that persists), `perfgate baseline reanchor --runs 5` (the command line itself, on
   the same files) re-anchors the baseline on those five runs; with --follow-note, after each run that says
   "a mode the calibration did not see", `perfgate calibrate --replace --reason 'a new mode'` (the command
   line itself, its processes this replica's) recalibrates, as the note tells the user to.

--trace prints every failing unchanged case: the run after onset, how many of its window runs drew the new mode
and how many lie beyond every calibration process, k, T, whether the note had been said before, its verdict
line, and which class of docs/decision-rule.md's trace it falls in.

Printed per scenario: unchanged runs that failed (a case without a code change REGRESSED), of how many; for
a code change, after how many runs it was named and by which finding (regressed, a change point, the
common-mode shift); re-anchors. The first-run scenarios gate one run right after each calibration (no
history) at 100 and 1,000 cases and give the per-run false-alarm rate with its 95% interval.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from perfgate.baseline import load_baseline
from perfgate.baseline.write import calibrated_baseline, write_baseline
from perfgate.config.settings import Settings
from perfgate.gate.findings import GateFacts
from perfgate.gate.run import GateOutcome, GateRequest, run_gate
from perfgate.gate.unseen import changes_named, run_modes
from perfgate.model import CaseResult, Environment, FindingKind, GateResult, Run, RunInfo, RunKind, Timer, Verdict
from perfgate.stats import summarize
from perfgate.store.verdicts import OUT_OF_WINDOW

ENV = Environment("cuda", "Simulated H100", compute_capability="9.0", driver_version="550.54")
UPDATED = replace(ENV, driver_version="555.42")
REANCHOR_AFTER = 3  # the simulated user re-anchors when this many of the last REANCHOR_RUNS runs named a
REANCHOR_RUNS = 5  # common-mode shift, the first of them included (a shift that persists, not one odd process)


@dataclass(frozen=True)
class Noise:
    """One process value's relative deviation: Gaussian (sd_pct), plus a slower mode in `mode_share` of the
    processes (`mode_gap_pct` slower), or Student-t tails (`tail_df` > 0)."""

    name: str
    sd_pct: float
    mode_share: float = 0.0
    mode_gap_pct: float = 0.0
    tail_df: float = 0.0

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        base = (
            rng.standard_t(self.tail_df, n) * math.sqrt((self.tail_df - 2) / self.tail_df)
            if self.tail_df
            else rng.standard_normal(n)
        )
        mode = (rng.random(n) < self.mode_share) * self.mode_gap_pct
        return 1.0 + (self.sd_pct * base + mode) / 100.0


QUIET = Noise("quiet (memory-bound, 0.3%)", 0.3)
SMALL = Noise("12 us-like (1.5%)", 1.5)
GEMM = Noise("bimodal GEMM-like (30% +4%, 0.8%)", 0.8, 0.3, 4.0)
TWO_MODES = Noise("two modes (20% +2%, 0.3%)", 0.3, 0.2, 2.0)
HEAVY = Noise("heavy tails (t3, 0.5%)", 0.5, tail_df=3.0)
OUTLIERS = Noise("rare outliers (1% of processes 2x, 0.3%)", 0.3, 0.01, 100.0)
LOW = Noise("low noise (0.2%)", 0.2)
MODE40 = Noise("two modes (40% +3%, 0.2%)", 0.2, 0.4, 3.0)
MIX = (QUIET, SMALL, GEMM, QUIET, SMALL, QUIET, GEMM, QUIET, SMALL, QUIET)
CASE_0 = frozenset({0})  # the case a code scenario changes


@dataclass(frozen=True)
class Scenario:
    name: str
    noises: tuple[Noise, ...]
    runs: int
    onset: int = 10  # the run at which the change starts
    env_step_pct: float = 0.0  # every case, from onset (a driver update when `driver` is set)
    driver: bool = False
    new_mode_share: float = 0.0  # from onset, each case's processes land this often in a slower mode
    new_mode_gap_pct: float = 0.0
    drift_pct_per_run: float = 0.0  # every case, from run 1
    code_creep_pct_per_run: float = 0.0  # case 0 only (a code change), from onset
    code_step_pct: float = 0.0  # case 0 only, from onset
    first_run_only: bool = False
    changed_cases: frozenset[int] = field(default_factory=frozenset)
    process_state_share: float = 0.0  # this share of processes runs every case `process_state_gap_pct` slower
    process_state_gap_pct: float = 0.0
    process_state_onset: int = 0  # the shared state appears from this run (0: in the calibration too)

    def factor(self, case: int, run: int, rng: np.random.Generator) -> float:
        f = 1.0 + self.drift_pct_per_run * run / 100.0
        if run >= self.onset:
            f *= 1.0 + self.env_step_pct / 100.0
            if self.new_mode_share and rng.random() < self.new_mode_share:
                f *= 1.0 + self.new_mode_gap_pct / 100.0
            if case == 0:
                f *= 1.0 + (self.code_step_pct + self.code_creep_pct_per_run * (run - self.onset + 1)) / 100.0
        return f

    def env(self, run: int) -> Environment:
        return UPDATED if self.driver and run >= self.onset else ENV


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("driver update (+3% every case)", MIX, 40, env_step_pct=3.0, driver=True),
        Scenario("new mode (40% of processes +3%)", MIX, 50, new_mode_share=0.4, new_mode_gap_pct=3.0),
        Scenario("machine drift (+0.03%/run)", MIX, 100, drift_pct_per_run=0.03),
        Scenario("creep quiet (+0.5%/run)", (QUIET,) + MIX[1:], 40, code_creep_pct_per_run=0.5, changed_cases=CASE_0),
        Scenario("creep 12 us (+0.5%/run)", (SMALL,) + MIX[1:], 40, code_creep_pct_per_run=0.5, changed_cases=CASE_0),
        Scenario("creep GEMM (+0.5%/run)", (GEMM,) + MIX[1:], 40, code_creep_pct_per_run=0.5, changed_cases=CASE_0),
        Scenario("+3% step on 12 us", (SMALL,) + MIX[1:], 40, code_step_pct=3.0, changed_cases=CASE_0),
        Scenario("first run: two modes, 100 cases", (TWO_MODES,) * 100, 1, first_run_only=True),
        Scenario("first run: two modes, 1000 cases", (TWO_MODES,) * 1000, 1, first_run_only=True),
        Scenario("first run: two modes 40% +3%, 100 cases", (MODE40,) * 100, 1, first_run_only=True),
        Scenario("first run: two modes 40% +3%, 1000 cases", (MODE40,) * 1000, 1, first_run_only=True),
        Scenario("first run: Gaussian 0.3%, 100 cases", (QUIET,) * 100, 1, first_run_only=True),
        Scenario("first run: heavy tails, 100 cases", (HEAVY,) * 100, 1, first_run_only=True),
        # noise models the rule was not developed against (the self-check of docs/accuracy.md)
        Scenario("first run: rare 2x outliers, 100 cases", (OUTLIERS,) * 100, 1, first_run_only=True),
        Scenario(
            "first run: process state (20% +2% all cases), 100",
            (QUIET,) * 100,
            1,
            first_run_only=True,
            process_state_share=0.2,
            process_state_gap_pct=2.0,
        ),
        Scenario("process state over time (20% +2%)", MIX, 40, process_state_share=0.2, process_state_gap_pct=2.0),
        Scenario("two modes over time", (TWO_MODES,) * 10, 40),
        # the outside review's second round (issue 31): a per-case slow mode no calibration process caught, an
        # intermittent shared slow mode across a re-anchor, a tiny suite's first run after a driver update
        Scenario(
            "missed per-case mode (40% +3%), 100", (LOW,) * 100, 50, onset=1, new_mode_share=0.4, new_mode_gap_pct=3.0
        ),
        Scenario(
            "intermittent shared mode (40% +3%)",
            MIX,
            60,
            process_state_share=0.4,
            process_state_gap_pct=3.0,
            process_state_onset=10,
        ),
        Scenario(
            "first run: driver update +3%, 6 cases",
            MIX[:6],
            1,
            onset=1,
            env_step_pct=3.0,
            driver=True,
            first_run_only=True,
        ),
    )
}


def _result(case_id: str, value_ms: float) -> CaseResult:
    samples = [value_ms * (1 + d) for d in (-1e-4, 0.0, 1e-4)]  # a process median; the samples barely matter
    return CaseResult(case_id, summarize(samples, Timer.CUDA_EVENT), tuple(samples), nodeid=case_id)


def _run(env: Environment, results: Sequence[CaseResult], run: int, kind: RunKind = RunKind.GATE) -> Run:
    at = f"2026-01-01T{run // 3600:02d}:{run // 60 % 60:02d}:{run % 60:02d}+00:00"
    info = RunInfo(at, at, git_commit=f"{run:040x}", git_branch="main", run_uid=f"u{run}-{kind.value}", kind=kind)
    return Run(info, env, tuple(results))


@dataclass
class Tally:
    runs: int = 0
    failed_unchanged: int = 0  # runs failed by a case without a code change
    named_after: list[int] = field(default_factory=list)  # runs from onset to the code change's naming
    named_by: dict[str, int] = field(default_factory=dict)
    by_finding: dict[str, list[int]] = field(default_factory=dict)  # per finding: runs from onset to its first
    missed: int = 0  # calibrations in which the code change was never named
    common_named: list[int] = field(default_factory=list)  # runs from onset to the common-mode finding
    reanchors: int = 0
    fail_runs: list[int] = field(default_factory=list)  # per run index: failed-unchanged count
    late_runs: int = 0  # runs after the first re-anchor, or from onset + 2 REANCHOR_RUNS without one
    late_strict_common: int = 0  # of them, runs with a strict common-mode finding (strict mode fails them)
    intermittent_named: int = 0  # runs naming an intermittent shared state (a note)
    unseen_named: list[int] = field(default_factory=list)  # runs from onset to the first unseen-mode note
    unseen_runs: int = 0  # runs with the unseen-mode note
    recalibrations: int = 0  # `perfgate calibrate --replace` runs of the user who follows that note
    failed_after_note: int = 0  # failed unchanged runs after the note was first said
    trace: list[dict[str, object]] = field(default_factory=list)  # --trace: one row per failing case


class Replica:
    """One calibration of one scenario, in its own directory and history."""

    def __init__(self, scenario: Scenario, seed: int, root: Path, processes: int) -> None:
        self.s, self.rng, self.root, self.processes = scenario, np.random.default_rng(seed), root, processes
        self.ids = [f"sim/test_case.py::test_{i:04d}" for i in range(len(scenario.noises))]
        self.base_ms = 0.05 * np.exp(self.rng.uniform(0, 4, len(self.ids)))
        self.settings = Settings(
            enabled=True,
            db_path=root / "history.db",
            baseline_dir=root / "baselines",
            rootdir=root,
            noise_branch="main",
        )
        (root / "pyproject.toml").write_text('[tool.perfgate]\nnoise_branch = "main"\n')  # read by the re-anchor CLI
        self.path = root / "baselines" / "simulated-h100.json"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.in_mode: dict[tuple[int, int], bool] = {}  # (case, run): the run's own process drew the new mode

    def value(self, case: int, run: int, state: float = 1.0) -> float:
        noise = self.s.noises[case]
        draw = noise.draw(self.rng, 1)[0]
        f = self.s.factor(case, run, self.rng)
        if self.s.new_mode_share and run >= self.s.onset and (case, run) not in self.in_mode:
            # the run's own process (the first drawn): the one its noise window keeps (--trace)
            self.in_mode[case, run] = f > self.s.factor(case, run, _NO_DRAW) * (1 + self.s.new_mode_gap_pct / 200)
        return float(self.base_ms[case] * draw * f * state)

    def process_state(self, run: int) -> float:
        """One process's state shared by every case it measures (a clock or power state, say)."""
        slow = run >= self.s.process_state_onset and self.rng.random() < self.s.process_state_share
        return 1.0 + self.s.process_state_gap_pct / 100.0 if slow else 1.0

    def process(self, run: int) -> list[CaseResult]:
        state = self.process_state(run)
        return [_result(cid, self.value(i, run, state)) for i, cid in enumerate(self.ids)]

    def calibrate(self) -> None:
        runs = [_run(ENV, self.process(0), -p - 1, RunKind.CALIBRATION) for p in range(self.processes)]
        b = calibrated_baseline(None, runs, self.path, "sim", "simulated calibration", self.settings)
        write_baseline(b)

    def gate(self, run: int) -> GateOutcome:
        env = self.s.env(run)
        results = self.process(run)
        index = {cid: i for i, cid in enumerate(self.ids)}

        def confirmer(case_ids: Sequence[str]) -> Mapping[str, CaseResult]:
            state = self.process_state(run)  # one fresh process measures every suspect of a round
            return {cid: _result(cid, self.value(index[cid], run, state)) for cid in case_ids}

        baseline = load_baseline(self.path)
        return run_gate(
            GateRequest(
                run=_run(env, results, run),
                settings=replace(self.settings, store=not self.s.first_run_only),
                baseline=baseline,
                baseline_path=self.path,
                facts=GateFacts(baseline_path=str(self.path)),
                confirmer=confirmer,
                may_write_baseline=False,
            )
        )

    def reanchor(self, *extra: str) -> None:
        from perfgate.cli import main

        code = main(
            [
                "baseline",
                "reanchor",
                str(self.path),
                "--db",
                str(self.settings.db_path),
                "--rootdir",
                str(self.root),
                "--runs",
                str(REANCHOR_RUNS),
                *extra,
            ]
        )
        if code != 0:
            raise SystemExit(f"replay_scenarios: perfgate baseline reanchor exited {code}")

    def recalibrate(self, run: int) -> None:
        """The user who follows the unseen-mode note after gate run `run`: `perfgate calibrate --replace --reason
        'a new mode'`, the command line itself on the same files, its processes this replica's (drawn as the
        gate's at this run: what the pytest processes it starts would measure), as many as it takes without
        --runs for the suite."""
        import perfgate.cli.calibrate as cli_calibrate
        from perfgate.baseline.calibrate import Calibration, processes_for
        from perfgate.cli import main

        def measured(settings: Settings, runs: int | None, *_: object, **__: object) -> Calibration:
            n = runs or processes_for(len(self.ids), settings.false_alarm_pct)
            env = self.s.env(run)
            done = [_run(env, self.process(run), run, RunKind.CALIBRATION) for _ in range(n)]
            # one second with gate run `run`: the window restarts at the next gate run (run_gate noise_windows)
            done = [replace(r, info=replace(r.info, run_uid=f"u{run}-recalibration-{p}")) for p, r in enumerate(done)]
            return Calibration(tuple(done), False, n, len(self.ids))

        argv = ["calibrate", "--replace", "--reason", "a new mode", "--rootdir", str(self.root)]
        argv += ["--db", str(self.settings.db_path), "--baseline-file", str(self.path)]
        real = cli_calibrate.calibrate
        cli_calibrate.calibrate = measured  # type: ignore[assignment]
        try:
            code = main(argv)
        finally:
            cli_calibrate.calibrate = real
        if code != 0:
            raise SystemExit(f"replay_scenarios: perfgate calibrate --replace exited {code}")


class _NoDraw:
    """An rng for `Scenario.factor` without the new mode's draw (share forced past 1: never drawn)."""

    def random(self) -> float:
        return 2.0


_NO_DRAW: np.random.Generator = _NoDraw()  # type: ignore[assignment]


def calibration_processes(scenario: Scenario, chosen: int | None) -> int:
    """What `perfgate calibrate` takes for this suite without --runs, unless `chosen`."""
    if chosen is not None:
        return chosen
    from perfgate.baseline.calibrate import processes_for

    return processes_for(len(scenario.noises), Settings().false_alarm_pct)


@dataclass(frozen=True)
class Policy:
    """What the simulated user does besides the re-anchor: follow the unseen-mode note (`perfgate calibrate
    --replace --reason 'a new mode'` after the run that says it), and whether failing cases are traced."""

    follow_note: bool = False
    trace: bool = False


def replay(
    scenario: Scenario,
    seed: int,
    tally: Tally,
    quiet_out: Callable[[], object],
    processes: int | None = None,
    policy: Policy = Policy(),
) -> None:
    with tempfile.TemporaryDirectory(prefix="perfgate-scenario-") as tmp:
        rep = Replica(scenario, seed, Path(tmp), calibration_processes(scenario, processes))
        rep.calibrate()
        named: int | None = None
        seen: set[str] = set()
        recent: list[bool] = []  # whether each of the last runs named a common-mode shift
        common_seen = reanchored = False
        noted: int | None = None  # the first run that said the unseen-mode note
        window: dict[str, list[int]] = {cid: [] for cid in rep.ids}  # --trace: each case's window runs
        for run in range(1, scenario.runs + 1):
            with quiet_out():
                out = rep.gate(run)
            tally.runs += 1
            g = out.gate
            regressed = {c.case_id for c in g.comparisons if c.verdict is Verdict.REGRESSED and c.gated}
            changed = {rep.ids[i] for i in scenario.changed_cases}
            failed_unchanged = bool(regressed - changed)
            tally.failed_unchanged += failed_unchanged
            tally.fail_runs.append(int(failed_unchanged))
            tally.failed_after_note += failed_unchanged and noted is not None
            kinds = {f.kind for f in g.findings}
            if policy.trace:
                tally.trace += _traced(rep, out, run, sorted(regressed - changed), window, noted, seed)
            if FindingKind.UNSEEN_MODE in kinds:
                tally.unseen_runs += 1
                if noted is None and run >= scenario.onset:
                    tally.unseen_named.append(run - scenario.onset)
                noted = run if noted is None else noted
                moded = {m.case_id for m in run_modes(out.run.results, load_baseline(rep.path), g)}
                if policy.follow_note and not changes_named(g, moded):  # as the note says: not on a run naming a change
                    with quiet_out():
                        rep.recalibrate(run)
                    tally.recalibrations += 1
                    window = {cid: [] for cid in rep.ids}
            named_now = FindingKind.COMMON_SHIFT in kinds
            tally.intermittent_named += FindingKind.INTERMITTENT_SHIFT in kinds
            if reanchored or run >= scenario.onset + 2 * REANCHOR_RUNS:
                tally.late_runs += 1
                tally.late_strict_common += named_now
            recent = (recent + [named_now])[-REANCHOR_RUNS:]
            if named_now and not common_seen and run >= scenario.onset:
                tally.common_named.append(run - scenario.onset)
            common_seen = common_seen or named_now
            if len(recent) == REANCHOR_RUNS and sum(recent) >= REANCHOR_AFTER and recent[0]:
                with quiet_out():
                    rep.reanchor()  # on the last REANCHOR_RUNS runs, the first of which already showed the shift
                tally.reanchors += 1
                recent, reanchored = [], True
            if changed and run >= scenario.onset:
                for by in _named_by(g, changed):
                    if by not in seen:
                        seen.add(by)
                        tally.by_finding.setdefault(by, []).append(run - scenario.onset)
                    if named is None:
                        named = run - scenario.onset
                        tally.named_after.append(named)
                        tally.named_by[by] = tally.named_by.get(by, 0) + 1
        if scenario.changed_cases and named is None:
            tally.missed += 1


def _traced(
    rep: Replica,
    out: GateOutcome,
    run: int,
    failing: Sequence[str],
    window: dict[str, list[int]],
    noted: int | None,
    seed: int,
) -> list[dict[str, object]]:
    """One row per unchanged case this run failed: the run after onset, how many of the case's window runs
    drew the new mode (the simulation's truth) and how many lie beyond every calibration process (what the
    gate sees), its k, whether the unseen-mode note was said in an earlier run, and its terminal line.
    Then this run joins each passing case's window (store/window.py: a case's failing runs stay out)."""
    from perfgate.baseline import load_baseline
    from perfgate.gate.unseen import case_modes
    from perfgate.metrics import TIME_METRIC

    base = load_baseline(rep.path)
    rows = []
    index = {cid: i for i, cid in enumerate(rep.ids)}
    for cid in failing:
        i = index[cid]
        held = window[cid][-30:]
        c = next(c for c in out.gate.comparisons if c.case_id == cid and c.gated)
        res = next(r for r in out.run.results if r.case_id == cid)
        modes = [m for m in case_modes(cid, res, base.cases[cid], TIME_METRIC) if m.slower]
        line = next((ln for ln in out.terminal if cid.split("::")[-1] in ln), "")
        rows.append(
            {
                "seed": seed,
                "run_after_onset": run - rep.s.onset,
                "case": cid,
                "window_runs": len(held),
                "window_in_mode": sum(rep.in_mode.get((i, r), False) for r in held),
                "window_beyond_calibration": modes[0].runs if modes else 0,
                "k": c.processes,
                "stages": c.stages,
                "change_pct": c.change_pct,
                "threshold_pct": c.threshold_pct,
                "noted_before": noted is not None,
                "class": _failure_class(sum(rep.in_mode.get((i, r), False) for r in held), modes, noted is not None),
                "line": " ".join(line.split()),
            }
        )
    failed = {c.case_id for c in out.gate.comparisons if c.verdict in OUT_OF_WINDOW}
    for cid in rep.ids:
        if cid not in failed:
            window[cid].append(run)
    return rows


FAILURE_CLASSES = {
    "unseen": "no run had shown the mode: the case's window holds none and no note was said (share^k)",
    "noted, clean window": "the note was said in an earlier run; this case's window holds no process of the mode",
    "noted, mode in window": "the note was said in an earlier run; the case's window holds the mode",
    "mode in window, no note": "the case's window holds the mode; no note yet",
}


def _failure_class(in_window: int, modes: Sequence[object], noted: bool) -> str:
    """Step 1 of issue 31's trace: what could have prevented this failure (FAILURE_CLASSES). `modes`: the
    slower modes the gate saw in the case's window (gate/unseen.py)."""
    if noted:
        return "noted, mode in window" if in_window or modes else "noted, clean window"
    return "mode in window, no note" if in_window or modes else "unseen"


def _named_by(g: GateResult, changed: set[str]) -> list[str]:
    """Which findings name a changed case in this run, most decisive first."""
    out = []
    if any(c.case_id in changed and c.verdict is Verdict.REGRESSED for c in g.comparisons):
        out.append("regressed")
    if any(f.kind is FindingKind.CHANGE_POINT and any(cid in f.message for cid in changed) for f in g.findings):
        out.append("change point")
    if any(c.case_id in changed and c.verdict is Verdict.INCONCLUSIVE for c in g.comparisons):
        out.append("inconclusive")
    return out


def wilson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    z, p = 1.96, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def summary(name: str, t: Tally, calibrations: int, processes: int) -> dict[str, object]:
    lo, hi = wilson(t.failed_unchanged, t.runs)
    out: dict[str, object] = {
        "scenario": name,
        "calibrations": calibrations,
        "calibration_processes": processes,
        "runs": t.runs,
        "failed_unchanged_runs": t.failed_unchanged,
        "failed_unchanged_pct": 100.0 * t.failed_unchanged / max(1, t.runs),
        "failed_unchanged_ci_pct": (100.0 * lo, 100.0 * hi),
        "reanchors": t.reanchors,
    }
    if t.named_after or t.missed:
        out["named_after_runs"] = sorted(t.named_after)
        out["named_by"] = t.named_by
        out["never_named"] = t.missed
        out["first_by_finding"] = {k: sorted(v) for k, v in t.by_finding.items()}
    if t.common_named:
        out["common_shift_named_after_runs"] = sorted(t.common_named)
    if t.failed_unchanged and not t.named_after:
        out["failed_unchanged_at_runs"] = sorted(
            {i % max(1, t.runs // calibrations) + 1 for i, f in enumerate(t.fail_runs) if f}
        )
    if t.unseen_runs or t.recalibrations:
        out["unseen_note"] = {
            "first_after_runs": sorted(t.unseen_named),
            "runs": t.unseen_runs,
            "failed_after_note": t.failed_after_note,
            "recalibrations": t.recalibrations,
        }
    if t.intermittent_named or t.late_strict_common:
        out["late_strict_common"] = (t.late_strict_common, t.late_runs)
        out["intermittent_named_runs"] = t.intermittent_named
    return out


def render(rows: Sequence[dict[str, object]]) -> str:
    lines = []
    for r in rows:
        lo, hi = r["failed_unchanged_ci_pct"]  # type: ignore[misc]
        line = (
            f"{r['scenario']:42s} calibrations {r['calibrations']:4d} x {r['calibration_processes']:2d} processes  "
            f"runs {r['runs']:5d}  failed unchanged "
            f"{r['failed_unchanged_runs']:4d} ({r['failed_unchanged_pct']:.2f}%, 95% {lo:.2f}-{hi:.2f}%)"
        )
        if r.get("reanchors"):
            line += f"  re-anchors {r['reanchors']}"
        if "common_shift_named_after_runs" in r:
            named = r["common_shift_named_after_runs"]
            assert isinstance(named, list)
            line += f"  common shift named after {_range(named)} run(s)"
        if r.get("failed_unchanged_at_runs"):
            line += f"\n    unchanged runs failed at run(s) {r['failed_unchanged_at_runs']}"
        if "late_strict_common" in r:
            late, of = r["late_strict_common"]  # type: ignore[misc]
            line += (
                f"\n    strict common-mode finding in {late} of {of} runs after a re-anchor (or onset + 10); "
                f"intermittent shared state named in {r['intermittent_named_runs']} runs"
            )
        if "unseen_note" in r:
            u = r["unseen_note"]
            assert isinstance(u, dict)
            line += (
                f"\n    unseen-mode note first said after {_range(u['first_after_runs'])} run(s), in "
                f"{u['runs']} runs; unchanged runs failed after it {u['failed_after_note']}; "
                f"recalibrations {u['recalibrations']}"
            )
        if "named_after_runs" in r:
            named = r["named_after_runs"]
            assert isinstance(named, list)
            line += f"\n    code change first named after {_range(named)} run(s) (never in {r['never_named']})"
            first = r["first_by_finding"]
            assert isinstance(first, dict)
            line += "".join(f"; {k} after {_range(v)} ({len(v)} calibrations)" for k, v in first.items())
        lines.append(line)
    return "\n".join(lines)


def render_trace(rows: Sequence[dict[str, object]]) -> str:
    """--trace: one line per failing unchanged case."""
    lines = []
    for r in rows:
        for t in r.get("trace", []):  # type: ignore[attr-defined]
            lines.append(
                f"{r['scenario']} seed {t['seed']} run +{t['run_after_onset']} [{t['class']}]: window "
                f"{t['window_in_mode']} of {t['window_runs']} in the mode ({t['window_beyond_calibration']} beyond "
                f"calibration), k {t['k']}, T {t['threshold_pct']:.2f}%, note said before: "
                f"{'yes' if t['noted_before'] else 'no'}: {t['line']}"
            )
    return "\n".join(lines)


def _range(values: Sequence[int]) -> str:
    if not values:
        return "-"
    return f"median {statistics.median(values):g} ({min(values)}-{max(values)})"


class _Silence:
    """The gate's own messages (stored run N ...) are not the benchmark's output."""

    def __enter__(self) -> None:
        self._null = open(os.devnull, "w")  # noqa: SIM115
        self._old = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = self._null

    def __exit__(self, *exc: object) -> None:
        sys.stdout, sys.stderr = self._old
        self._null.close()


def run(
    names: Sequence[str],
    calibrations: int,
    first_run_calibrations: int,
    seed: int,
    processes: int | None = None,
    policy: Policy = Policy(),
    first: int = 0,
) -> list[dict[str, object]]:
    from perfgate.report.progress import open_progress

    os.environ.pop("GITHUB_STEP_SUMMARY", None)
    rows = []
    with open_progress() as progress, progress.task("scenarios", total=len(names)) as task:
        for k, name in enumerate(names):
            s = SCENARIOS[name]
            n = first_run_calibrations if s.first_run_only else calibrations
            tally = Tally()
            for c in range(first, first + n):  # calibration c's seed does not depend on `first`: a subset replays
                replay(s, seed * 100_003 + k * 1009 + c, tally, _Silence, processes, policy)
            rows.append(summary(name, tally, n, calibration_processes(s, processes)))
            if policy.trace:
                rows[-1]["trace"] = tally.trace
            task.advance(name)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calibrations", type=int, default=6, help="independent calibrations per scenario over time")
    p.add_argument("--first-run-calibrations", type=int, default=400, help="calibrations per first-run scenario")
    p.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="only these (repeatable)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--first", type=int, default=0, help="start at this calibration (the same seeds as a full run)")
    p.add_argument(
        "--calibration-processes",
        type=int,
        help="processes per calibration (default: what perfgate calibrate takes without --runs for the suite)",
    )
    p.add_argument(
        "--follow-note",
        action="store_true",
        help="the user follows the unseen-mode note: `perfgate calibrate --replace --reason 'a new mode'` after "
        "each run that says it",
    )
    p.add_argument("--trace", action="store_true", help="print every failing unchanged case (and keep it in --json)")
    p.add_argument("--json", type=Path, help="write the rows here")
    args = p.parse_args(argv)
    names = args.scenario or list(SCENARIOS)
    policy = Policy(args.follow_note, args.trace)
    rows = run(
        names, args.calibrations, args.first_run_calibrations, args.seed, args.calibration_processes, policy, args.first
    )
    print(render(rows))
    if args.trace:
        print(render_trace(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
