"""The report half of the scale benchmark (issue 21): what a gate costs per case beside plain pytest on the
same tests, and what the summary, the PR comment and the job summary cost to render at 1k-16k cases with
many findings, beside a plain baseline (one formatted line per comparison). scripts/bench_scale.py calls
these; run alone:

    python scripts/bench_reports.py [--gate-sizes 1000,10000] [--report-sizes 1000,10000,16000]
                                    [--perfgate-src /old/checkout] [--out reports.md]

Gate rows are wall and CPU seconds of whole `pytest` processes (CPU: user + system of the process and
its children) on a generated suite of host-clock cases (5 samples each, no warm-up, no confirmation), the
gate writing the Markdown summary and the JSON results. The gate's run is the second one (the first writes
the baseline); the plain run is `pytest` without `--perfgate` on the same files, where each perf callable
runs once. Render rows run in a fresh interpreter with perfgate from `--perfgate-src`; the synthetic gate
(tests/scale.py, loaded from this checkout) has 1% regressed and 25% inconclusive cases, one finding each.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

SUITE = """
import pytest

@pytest.mark.parametrize("i", range({n}))
def test_case(perfgate, i):
    perfgate(sum, range(10))
"""
PYPROJECT = """
[tool.perfgate]
warmup_ms = 0
min_samples = 5
max_samples = 5
budget_ms = 1
memory = false
confirm_runs = 0
threshold_pct = 1000.0
"""

RENDER = """
import importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location("scale", SCALE)
scale = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scale)
import perfgate
from perfgate.report.markdown import render_markdown
print("perfgate from", perfgate.__file__, file=sys.stderr)
gate, run = scale.scale_gate(N, N // 100, N // 4)
out = {}
t = time.process_time()
text = render_markdown(gate, run=run)
out["summary_s"] = time.process_time() - t
out["summary_chars"] = len(text)
try:
    from perfgate.ci.github import comment_body
    t = time.process_time()
    body = comment_body(text, "perfgate")
    out["comment_s"] = time.process_time() - t
    out["comment_chars"] = len(body)
    out["regressions_in_comment"] = sum(f"-case{i:05d}]`" in body for i in range(N // 100))
except Exception as err:  # an old perfgate's comment_body takes one string too; a failure is reported
    out["comment_error"] = repr(err)
try:
    from perfgate.report.markdown_fit import STEP_SUMMARY_LIMIT, fit_markdown
    t = time.process_time()
    step = fit_markdown(text, STEP_SUMMARY_LIMIT)
    out["step_s"] = time.process_time() - t
    out["step_bytes"] = len(step.encode())
except ImportError:  # before markdown_fit: the summary was appended as rendered
    out["step_s"] = 0.0
    out["step_bytes"] = len(text.encode())
t = time.process_time()
plain = "\\n".join(f"| {c.case_id} | {c.metric} | {c.baseline} | {c.current} | {c.change_pct} | {c.verdict.value} |"
                   for c in gate.comparisons)
out["plain_s"] = time.process_time() - t
out["plain_chars"] = len(plain)
print(json.dumps(out))
"""


def _pytest(args: list[str], cwd: Path, src: Path) -> tuple[float, float, int, str]:
    """(wall s, CPU s, exit code, last line) of one `python -m pytest` process."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    for var in ("GITHUB_STEP_SUMMARY", "PERFGATE_DB"):
        env.pop(var, None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = proc.stdout.strip().splitlines()
    return wall, cpu, proc.returncode, lines[-1] if lines else proc.stderr[-300:]


@dataclass(frozen=True)
class GateRow:
    cases: int
    plain_wall_s: float
    plain_cpu_s: float
    gate_wall_s: float
    gate_cpu_s: float
    first_gate_wall_s: float  # the run that writes the baseline
    summary_bytes: int
    json_bytes: int


@dataclass(frozen=True)
class RenderRow:
    cases: int
    summary_s: float
    summary_chars: int
    comment_s: float | None
    comment_chars: int
    regressions_in_comment: int
    step_s: float
    step_bytes: int
    plain_s: float
    plain_chars: int
    comment_error: str = ""


def gate_overhead_rows(src: Path, tmp: Path, sizes: list[int]) -> list[GateRow]:
    rows = []
    for n in sizes:
        project = tmp / f"suite{n}"
        project.mkdir()
        (project / "test_many.py").write_text(textwrap.dedent(SUITE.format(n=n)))
        (project / "pyproject.toml").write_text(PYPROJECT)
        plain_wall, plain_cpu, code, last = _pytest(["test_many.py"], project, src)
        assert code == 0, f"plain pytest failed: {last}"
        gate_args = ["--perfgate", "test_many.py", "--perfgate-summary=summary.md", "--perfgate-json=out.json"]
        first = _pytest(gate_args, project, src)  # writes the baseline
        assert first[2] == 0, f"the first gate failed: {first[3]}"
        wall, cpu, code, last = _pytest(gate_args, project, src)
        assert code == 0, f"the gate failed: {last}"
        rows.append(
            GateRow(
                n,
                plain_wall,
                plain_cpu,
                wall,
                cpu,
                first[0],
                (project / "summary.md").stat().st_size,
                (project / "out.json").stat().st_size,
            )
        )
    return rows


def report_rows(src: Path, sizes: list[int]) -> list[RenderRow]:
    rows = []
    for n in sizes:
        code = f"N = {n}\nSCALE = {str(ROOT / 'tests' / 'scale.py')!r}\n" + textwrap.dedent(RENDER)
        # run from a directory without a perfgate: `python -c` puts the current directory first on sys.path
        proc = subprocess.run(
            [PY, "-c", code],
            env={**os.environ, "PYTHONPATH": str(src)},
            capture_output=True,
            text=True,
            timeout=3600,
            check=False,
            cwd=tempfile.gettempdir(),
        )
        if proc.returncode != 0:
            raise RuntimeError(f"render benchmark failed at {n} cases: {proc.stderr[-2000:]}")
        d = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append(
            RenderRow(
                n,
                d["summary_s"],
                d["summary_chars"],
                d.get("comment_s"),
                d.get("comment_chars", 0),
                d.get("regressions_in_comment", 0),
                d["step_s"],
                d["step_bytes"],
                d["plain_s"],
                d["plain_chars"],
                d.get("comment_error", ""),
            )
        )
    return rows


def fitted_exponent(sizes: list[float], seconds: list[float]) -> float | None:
    """Least-squares slope of log(time) on log(size): time ~ size^k."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(sizes, seconds) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else None


def _exponent_line(name: str, sizes: list[float], seconds: list[float]) -> list[str]:
    k = fitted_exponent(sizes, seconds)
    return [f"Fitted exponent, {name}: {k:.2f} (time ~ cases^{k:.2f})"] if k is not None else []


def render_gate(rows: list[GateRow]) -> list[str]:
    out = [
        "| host cases | plain pytest: wall / CPU s | pytest --perfgate, summary + JSON written: wall / CPU s "
        "| ratio: wall / CPU | overhead per case: wall / CPU | first gate, writing the baseline: wall s "
        "| summary / JSON size |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r.cases:,} | {r.plain_wall_s:.2f} / {r.plain_cpu_s:.2f} | {r.gate_wall_s:.2f} / "
            f"{r.gate_cpu_s:.2f} | {r.gate_wall_s / r.plain_wall_s:.2f}x / {r.gate_cpu_s / r.plain_cpu_s:.2f}x "
            f"| {1000 * (r.gate_wall_s - r.plain_wall_s) / r.cases:.2f} / "
            f"{1000 * (r.gate_cpu_s - r.plain_cpu_s) / r.cases:.2f} ms | {r.first_gate_wall_s:.2f} "
            f"| {r.summary_bytes:,} B / {r.json_bytes:,} B |"
        )
    sizes = [float(r.cases) for r in rows]
    return (
        out
        + [""]
        + _exponent_line("gate wall time", sizes, [r.gate_wall_s for r in rows])
        + _exponent_line("plain pytest wall time", sizes, [r.plain_wall_s for r in rows])
    )


def render_render(rows: list[RenderRow]) -> list[str]:
    out = [
        "| cases (1% regressed, 25% inconclusive) | summary: CPU s / chars | PR comment: CPU s / chars "
        "(regressions shown) | job summary cut to 1 MiB: CPU s / bytes | plain, one line per comparison: "
        "CPU s / chars |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        comment = (
            f"{r.comment_s:.3f} / {r.comment_chars:,} ({r.regressions_in_comment} of {r.cases // 100})"
            if r.comment_s is not None
            else f"error: {r.comment_error}"
        )
        out.append(
            f"| {r.cases:,} | {r.summary_s:.3f} / {r.summary_chars:,} | {comment} | {r.step_s:.3f} / "
            f"{r.step_bytes:,} | {r.plain_s:.3f} / {r.plain_chars:,} |"
        )
    sizes = [float(r.cases) for r in rows]
    return (
        out
        + [""]
        + _exponent_line("summary", sizes, [r.summary_s for r in rows])
        + _exponent_line("comment", sizes, [r.comment_s or 0.0 for r in rows])
        + _exponent_line("plain lines", sizes, [r.plain_s for r in rows])
    )


def render_reports(gate: list[GateRow], reports: list[RenderRow]) -> str:
    out = render_gate(gate) + [""] if gate else []
    return "\n".join(out + (render_render(reports) if reports else [])) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gate-sizes", default="1000,10000")
    parser.add_argument("--report-sizes", default="1000,10000,16000")
    parser.add_argument("--perfgate-src", type=Path, default=ROOT)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="perfgate-reports-") as tmp:
        gate = gate_overhead_rows(args.perfgate_src, Path(tmp), [int(s) for s in args.gate_sizes.split(",") if s])
    reports = report_rows(args.perfgate_src, [int(s) for s in args.report_sizes.split(",") if s])
    text = render_reports(gate, reports)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
