"""An initial baseline seeded from a pytest-benchmark saved run (`.benchmarks/<machine>/NNNN_name.json`, or a
`--benchmark-json` file): a project moving to perfgate keeps gating against the numbers it already has.

Only cases the baseline does not hold yet are seeded (an imported number never replaces a measured one),
each marked `imported_from` (the file), shown as such by `perfgate baseline show` and the gate, and
uncalibrated: the gate's first-run rule applies (only a change beyond 25% in every process fails) until
`perfgate calibrate` measures the case into the baseline. pytest-benchmark times the host's wall clock per
call, as perfgate's host clock does, so the cases are host-clock cases; a file written on another CPU is
refused (a baseline is per machine). Without the file's samples (saved without `--benchmark-save-data`)
a case keeps its five order statistics (min, q1, median, q3, max) as its samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perfgate.baseline import MAX_UPDATES_KEPT, Baseline, BaselineCase, Update
from perfgate.errors import BaselineError, ReportFileError
from perfgate.model import Environment, Run, Timer


@dataclass(frozen=True)
class Seeded:
    baseline: Baseline
    added: tuple[str, ...]  # case ids seeded from the file
    kept: tuple[str, ...]  # case ids the baseline already held (not replaced)


def seeded_baseline(
    old: Baseline | None, source: Path, path: Path, env: Environment, who: str, root: Path | None = None
) -> Seeded:
    """`old` (None: no baseline yet) with the cases of the pytest-benchmark file at `source` it lacks; the
    file is named relative to `root` (the project) when it lies inside it."""
    from perfgate.parse.pytest_benchmark import read_pytest_benchmark

    try:
        run = read_pytest_benchmark(source)
    except ReportFileError as err:
        raise BaselineError(source, f"cannot seed a baseline from it: {err.problem}") from err
    _check_machine(source, run, env)
    cases = dict(old.cases) if old else {}
    added = tuple(r.case_id for r in run.results if r.case_id not in cases)
    for r in run.results:
        if r.case_id in cases:
            continue
        t = r.timing
        samples = r.samples_ms or (t.min_ms, t.q1_ms, t.median_ms, t.q3_ms, t.max_ms)
        cases[r.case_id] = BaselineCase(r.case_id, Timer.HOST, t.median_ms, samples, imported_from=_named(source, root))
    update = Update(
        at=run.info.finished_at,
        by=who,
        commit=run.info.git_commit,
        reason=f"imported from pytest-benchmark's {source.name}",
        cases=len(added),
    )
    updates = ((old.updates if old else ()) + (update,))[-MAX_UPDATES_KEPT:]
    environment = old.environment if old else env
    kept = tuple(r.case_id for r in run.results if r.case_id not in added)
    return Seeded(Baseline(path=path, environment=environment, cases=cases, updates=updates), added, kept)


def _named(source: Path, root: Path | None) -> str:
    if root is not None and source.resolve().is_relative_to(root.resolve()):
        return source.resolve().relative_to(root.resolve()).as_posix()
    return str(source)


def seed_baseline_file(source: Path, path: Path, env: Environment, who: str, root: Path | None = None) -> Seeded:
    """Seed the baseline file at `path` (under its lock: a concurrent writer's cases are kept)."""
    from perfgate.baseline.write import update_baseline_file

    result: list[Seeded] = []

    def change(old: Baseline | None) -> Baseline | None:
        result.append(seeded_baseline(old, source, path, env, who, root))
        return result[-1].baseline if result[-1].added else None

    update_baseline_file(path, change)
    return result[-1]


def _check_machine(source: Path, run: Run, env: Environment) -> None:
    """The file's CPU (py-cpuinfo's brand, as pytest-benchmark records it) must be this machine's."""
    theirs = run.environment.device_name.strip()
    ours = {env.cpu_brand.strip(), env.device_name.strip()} - {""}
    if env.device_kind != "host":
        raise BaselineError(source, "a pytest-benchmark run seeds a host-clock baseline; this run times on a GPU")
    if theirs and theirs != "unknown" and theirs not in ours:
        raise BaselineError(
            source,
            f"measured on {theirs!r}, this machine is {env.device_name!r}: a baseline is per machine "
            "(seed it on the machine that saved the run)",
        )


def imported_cases(baseline: Baseline | None) -> dict[str, str]:
    """Case id -> the file it was imported from, for the cases still imported."""
    if baseline is None:
        return {}
    return {cid: c.imported_from for cid, c in baseline.cases.items() if c.imported_from}


def imported_line(baseline: Baseline | None) -> str:
    """One line for the gate and `baseline show`; "" when no case is imported."""
    cases = imported_cases(baseline)
    if not cases:
        return ""
    from perfgate.gate.decision import GROSS_PCT

    sources = sorted({Path(s).name for s in cases.values()})
    return (
        f"perfgate: {len(cases)} baseline case(s) imported from pytest-benchmark ({', '.join(sources[:3])}"
        f"{', ...' if len(sources) > 3 else ''}), uncalibrated: only a change beyond {GROSS_PCT:g}% "
        "in every process fails until `perfgate calibrate` measures them"
    )
