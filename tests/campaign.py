"""The mutation campaign: mutated real files (tests/mutations.py) through every reader perfgate has, each
exit-0 result judged by the invariant oracle (tests/oracle.py).

Inputs run in a worker process (`python -m tests.campaign`), one after another; the parent gives each
input a deadline and restarts the worker when it hangs (its process group is killed: NVIDIA's reader
child too) or dies (a native abort: segfault, abort(), the kernel's OOM killer). Outcomes per input:

    read          every step read it, and the oracle found nothing wrong
    clean error   a step refused it in one PerfgateError line (exit 2 with one line, for commands)
    traceback     any other exception
    silent-wrong  exit 0 with a result that breaks an invariant
    hang          past the deadline
    native abort  the worker died

Readers named "X (semantic)" get tests/semantic.py's inputs (other producers' schemas, locale numbers,
duplicated ids, contradictory statistics, impossible physics, changes that must change nothing), and an
exit-0 reading of one is also judged by what its mutation says the truth is (`judge`).

Used by scripts/mutation_campaign.py (thousands of inputs per reader) and tests/test_mutation.py (CI).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import oracle
from tests.mutations import MAKERS, ROOT
from tests.semantic import SEMANTIC

OUTCOMES = ("read", "clean error", "traceback", "silent-wrong", "hang", "native abort", "generator error")
WORKER_MEMORY_BYTES = 4 << 30  # a reader that needs more is a finding (MemoryError), not a swapping machine


class Clean(Exception):
    """A step refused the input in one line."""


# --- the readers, as perfgate runs them -------------------------------------------------------------


def _cli(argv: list[str]) -> str:
    """A command's stdout; Clean on exit 2 (bad input) or 4 (a contradiction) with one line on stderr;
    AssertionError on anything else."""
    from perfgate.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    lines = err.getvalue().strip().splitlines()
    if code in (2, 4) and len(lines) == 1:
        raise Clean(lines[0])
    if code != 0:
        raise AssertionError(f"perfgate {argv[0]} exited {code}: {err.getvalue()[-300:]!r}")
    return out.getvalue()


def _strict_json(text: str) -> Any:
    def constant(name: str) -> Any:
        raise AssertionError(f"{name} in JSON output")

    return json.loads(text, parse_constant=constant)


def _analyze(
    path: Path, tmp: Path, charts: bool, rows: Callable[[dict[str, Any]], list[str]] | None = None
) -> list[str]:
    doc = _strict_json(_cli(["analyze", str(path), "--format", "json"]))
    found = oracle.analysis(doc) + (rows(doc) if rows else [])
    if charts and not found:  # charts and report.md: names and numbers reach matplotlib and Markdown
        _cli(["analyze", str(path), "--output-dir", str(tmp / "out")])
    return found


def read_nsys(path: Path, tmp: Path, rng: random.Random) -> Iterator[Callable[[], list[str]]]:
    from perfgate.measure.profilers import nsys_case_metrics
    from perfgate.parse.nsys_sqlite import read_nsys_sqlite

    def timeline() -> list[str]:
        t = read_nsys_sqlite(path)
        return oracle.timeline(t) + oracle.case_metrics(nsys_case_metrics(t, calls=3))

    yield lambda: _analyze(path, tmp, charts=rng.random() < 0.04, rows=lambda doc: oracle.nsys_rows(path, doc))
    yield timeline


def read_ncu_rep(path: Path, tmp: Path, rng: random.Random) -> Iterator[Callable[[], list[str]]]:
    from perfgate.analyze.readers import ncu_summary
    from perfgate.measure.profilers import ncu_case_metrics
    from perfgate.parse.ncu_report_file import read_ncu_report

    def launches() -> list[str]:
        found = read_ncu_report(path)
        out = [
            v
            for la in found
            for v in oracle.ncu_launch(
                f"launch {la.launch_id}",
                la.launch_id,
                la.name,
                ((k, m.value) for k, m in la.metrics.items()),
                {k: m.unit for k, m in la.metrics.items()},
            )
        ]
        doc = _strict_json(json.dumps(ncu_summary(path, "ncu-rep", found).as_dict(), allow_nan=False))
        return out + oracle.analysis(doc) + oracle.case_metrics(ncu_case_metrics(found))

    yield launches


def read_ncu_csv(path: Path, tmp: Path, rng: random.Random) -> Iterator[Callable[[], list[str]]]:
    from perfgate.measure.profilers import ncu_case_metrics
    from perfgate.parse.ncu_csv import read_ncu_csv as read

    yield lambda: _analyze(path, tmp, charts=rng.random() < 0.04)
    yield lambda: oracle.case_metrics(ncu_case_metrics(read(path)))


def read_torch(path: Path, tmp: Path, rng: random.Random) -> Iterator[Callable[[], list[str]]]:
    from perfgate.parse.torch_trace import read_torch_trace

    yield lambda: _analyze(path, tmp, charts=rng.random() < 0.04)
    yield lambda: oracle.timeline(read_torch_trace(path))


def read_benchmark(path: Path, tmp: Path, rng: random.Random) -> Iterator[Callable[[], list[str]]]:
    from perfgate.parse.pytest_benchmark import read_pytest_benchmark

    def imported() -> list[str]:
        run = read_pytest_benchmark(path)
        out = [v for r in run.results for v in oracle.timing(r.case_id, r.timing, r.samples_ms)]
        db = tmp / "h.db"
        _cli(["import-benchmark", str(path), "--db", str(db)])
        rows = _strict_json(_cli(["history", "--db", str(db), "--format", "json"]))
        return out + ([] if isinstance(rows, list) and rows else [f"history after import: {rows!r}"[:200]])

    yield imported


def read_results(path: Path, tmp: Path, rng: random.Random) -> Iterator[Callable[[], list[str]]]:
    def annotate() -> list[str]:
        lines = _cli(["ci", "annotate", str(path)]).splitlines()
        return [f"not a workflow command: {x[:80]!r}" for x in lines if not x.startswith("::")]

    yield annotate


def read_child(path: Path, tmp: Path, rng: random.Random) -> Iterator[Callable[[], list[str]]]:
    from perfgate.measure.processes import parse_child_output

    yield lambda: [v for r in parse_child_output(path, 0).results for v in oracle.case_result(r)]


def read_baseline(path: Path, tmp: Path, rng: random.Random) -> Iterator[Callable[[], list[str]]]:
    from perfgate.baseline import load_baseline

    def loaded() -> list[str]:
        b = load_baseline(path)
        return oracle.baseline(b) if b is not None else ["a file that exists read as no baseline"]

    yield loaded


READERS: dict[str, Callable[[Path, Path, random.Random], Iterator[Callable[[], list[str]]]]] = {
    "nsys-sqlite": read_nsys,
    "ncu-rep": read_ncu_rep,
    "ncu-csv": read_ncu_csv,
    "torch-json": read_torch,
    "pytest-benchmark": read_benchmark,
    "results-json": read_results,
    "child-output": read_child,
    "baseline": read_baseline,
}


# --- semantic mutations: what the reading must be (tests/semantic.py) --------------------------------------

SEMANTIC_SUFFIX = " (semantic)"
SEMANTIC_READERS = tuple(r + SEMANTIC_SUFFIX for r in SEMANTIC)


def _rows(items: Any, key: str, *fields: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(row.get(f) for f in (key, *fields)) for row in items)


def _project_analysis(path: Path, tmp: Path) -> dict[str, Any]:
    """What `perfgate analyze` says of a timeline: per kernel, transfer kind, API call and range, how many and
    how long; the GPU's busy and idle time; and the notes (a note is allowed to differ)."""
    doc = _strict_json(_cli(["analyze", str(path), "--format", "json"]))
    idle = doc.get("gpu_idle") or {}
    return {
        "kernels": _rows(doc.get("kernels", []), "name", "count", "total_ns", "min_ns", "max_ns"),
        "memory": _rows(doc.get("memory", []), "kind", "count", "bytes", "total_ns"),
        "api": _rows(doc.get("api", []), "name", "count", "total_ns"),
        "nvtx": _rows(doc.get("nvtx", []), "range", "count", "total_ns"),
        "idle": (idle.get("busy_ns"), idle.get("idle_ns"), idle.get("span_ns")),
        "notes": doc.get("notes", []),
    }


def _project_torch(path: Path, tmp: Path) -> dict[str, Any]:
    from perfgate.parse.torch_trace import read_torch_trace

    t = read_torch_trace(path)
    return {**_project_analysis(path, tmp), "annotated": sorted((k.name, k.nvtx_range) for k in t.kernels)}


def _project_ncu_csv(path: Path, tmp: Path) -> dict[str, Any]:
    from perfgate.parse.ncu_csv import read_ncu_csv

    launches = read_ncu_csv(path)
    return {
        "launches": sorted(
            (la.launch_id, la.name, tuple(sorted((k, m.value, m.unit) for k, m in la.metrics.items())))
            for la in launches
        ),
        "notes": [],
    }


def _project_benchmark(path: Path, tmp: Path) -> dict[str, Any]:
    from perfgate.parse.pytest_benchmark import read_pytest_benchmark

    run = read_pytest_benchmark(path)
    keys = ("n_samples", "median_ms", "mean_ms", "stdev_ms", "min_ms", "max_ms", "q1_ms", "q3_ms")
    return {"cases": sorted((r.case_id, *(getattr(r.timing, k) for k in keys)) for r in run.results), "notes": []}


def _project_child(path: Path, tmp: Path) -> dict[str, Any]:
    from perfgate.measure.processes import parse_child_output

    results = parse_child_output(path, 0).results
    return {
        "cases": sorted((r.case_id, r.timing.median_ms, r.timing.mean_ms, r.samples_ms) for r in results),
        "notes": [],
    }


def _project_results(path: Path, tmp: Path) -> dict[str, Any]:
    return {"annotations": sorted(_cli(["ci", "annotate", str(path)]).splitlines()), "notes": []}


def _project_baseline(path: Path, tmp: Path) -> dict[str, Any]:
    from perfgate.baseline import load_baseline

    b = load_baseline(path)
    cases = b.cases if b is not None else {}
    return {
        "cases": sorted((cid, c.median_ms, c.samples_ms, c.process_medians_ms) for cid, c in cases.items()),
        "notes": [],
    }


PROJECT: dict[str, tuple[Callable[[Path, Path], dict[str, Any]], float]] = {
    # reader: (projection, relative tolerance); torch's begin/end pairs round each event's end to the ns
    "nsys-sqlite": (_project_analysis, 1e-12),
    "ncu-csv": (_project_ncu_csv, 1e-9),
    "torch-json": (_project_torch, 1e-3),
    "pytest-benchmark": (_project_benchmark, 1e-12),
    "child-output": (_project_child, 1e-12),
    "results-json": (_project_results, 0.0),
    "baseline": (_project_baseline, 1e-12),
}


def _differs(want: Any, got: Any, rel: float) -> str:
    """Where two projections differ ("" when they agree within `rel` on every number)."""
    if isinstance(want, (int, float)) and isinstance(got, (int, float)) and not isinstance(want, bool):
        return "" if abs(want - got) <= rel * max(abs(want), abs(got)) else f"{want!r} != {got!r}"
    if isinstance(want, dict) and isinstance(got, dict):
        for key in want.keys() | got.keys():
            if key != "notes" and (d := _differs(want.get(key), got.get(key), rel)):
                return f"{key}: {d}"
        return ""
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(want) != len(got):
            return f"{len(want)} items != {len(got)}: {str(got)[:120]}"
        return next((d for a, b in zip(want, got) if (d := _differs(a, b, rel))), "")
    return "" if want == got else f"{str(want)[:60]!r} != {str(got)[:60]!r}"


def judge(reader: str, path: Path, expect: Any, tmp: Path) -> list[str]:
    """A semantic input that was read: is the reading the truth its mutation says?"""
    from perfgate.errors import PerfgateError

    if expect.kind == "refuse":
        return [f"read what must be refused: {expect.why}"]
    project, rel = PROJECT[reader]
    try:
        got = project(path, tmp)
        want = project(expect.reference, tmp) if expect.kind == "same" else None
    except (PerfgateError, Clean):
        return []  # refused in one line by the reading that is judged: allowed for every kind
    if expect.kind == "note":
        noted = any(re.search(expect.note, n) for n in got.get("notes", []))
        return [] if noted else [f"{expect.why}: read without a note matching {expect.note!r}"]
    diff = _differs(want, got, rel)
    return [f"{expect.why}: read as something else ({diff})"] if diff else []


def crash_site(err: BaseException) -> str:
    """The innermost frame in perfgate's own code (else the innermost frame), with the exception type."""
    frames = traceback.extract_tb(err.__traceback__)
    ours = [f for f in frames if "/perfgate/" in f.filename.replace("\\", "/")]
    f = (ours or frames or [None])[-1]
    where = f"{Path(f.filename).name}:{f.lineno} in {f.name}" if f else "?"
    return f"{type(err).__name__} at {where}: {str(err)[:120]}"


def run_one(reader: str, seed: int, tmp: Path, made: Callable[[], None] | None = None) -> tuple[str, str]:
    """(outcome, detail) of one input, in this process; `made` is called once the input exists. A reader
    named "X (semantic)" gets a semantic mutation of X's files, and its reading is judged by its Expect."""
    from perfgate.errors import PerfgateError

    rng = random.Random(f"{reader}:{seed}")
    base, expect = reader.removesuffix(SEMANTIC_SUFFIX), None
    try:
        if base != reader:
            path, expect = SEMANTIC[base](rng, tmp)
        else:
            path = MAKERS[reader](rng, tmp)
    except Exception as err:  # noqa: BLE001 - a generator bug is reported, not counted as perfgate's
        return "generator error", crash_site(err)
    if made is not None:
        made()
    outcome, detail = "read", ""
    for step in READERS[base](path, tmp, rng):
        try:
            found = step()
        except (PerfgateError, Clean) as err:
            if "\n" in str(err).strip():
                return "traceback", f"multi-line error: {str(err)[:200]!r}"
            if outcome == "read":
                outcome, detail = "clean error", str(err)[:200]
            continue
        except BaseException as err:  # noqa: BLE001 - every other escape is a finding
            return "traceback", crash_site(err)
        if found:
            return "silent-wrong", "; ".join(found)[:400]
    if expect is not None and outcome == "read":
        try:
            wrong = judge(base, path, expect, tmp)
        except BaseException as err:  # noqa: BLE001 - a judge that fails is a finding of the reading it judged
            return "traceback", crash_site(err)
        if wrong:
            return "silent-wrong", "; ".join(wrong)[:400]
    return outcome, detail


# --- the worker and the parent --------------------------------------------------------------------------


def worker() -> None:
    """Read `reader seed` lines on stdin, answer one JSON line each on the original stdout (readers and
    NVIDIA's library cannot write into the protocol: fd 1 goes to /dev/null)."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    for line in sys.stdin:
        reader, seed = line.rsplit(None, 1)  # a reader name may hold spaces: "torch-json (semantic)"
        tmp = Path(tempfile.mkdtemp(prefix=f"mut-{reader.split()[0]}-"))
        try:
            outcome, detail = run_one(reader, int(seed), tmp, made=lambda: answers.write("made\n"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        answers.write(json.dumps({"seed": int(seed), "outcome": outcome, "detail": detail}) + "\n")


@dataclass
class Tally:
    reader: str
    outcomes: Counter[str] = field(default_factory=Counter)
    sites: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    seconds: float = 0.0

    def add(self, seed: int, outcome: str, detail: str) -> None:
        self.outcomes[outcome] += 1
        if outcome not in ("read", "clean error"):
            self.sites[f"{outcome}: {detail}"[:300]].append(seed)

    @property
    def failures(self) -> int:
        return sum(self.outcomes[o] for o in ("traceback", "silent-wrong", "hang", "native abort"))


class Worker:
    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.campaign"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        self.pending = b""  # read from the pipe, not yet a whole line

    def _line(self, timeout_s: float) -> bytes | None:
        """The worker's next line; b"" when it died, None past the deadline. The pipe is read raw: a
        buffered reader could hold a second line that select() would never see."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                return b""
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line + b"\n"

    def ask(self, reader: str, seed: int, timeout_s: float) -> tuple[str, str]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{reader} {seed}\n".encode())
        self.proc.stdin.flush()
        made = False
        while True:  # "made" once the input exists (a generator that hangs is not perfgate's hang), then the answer
            line = self._line(timeout_s)
            if line is None:
                self.kill()
                return ("hang", f"no answer in {timeout_s:.0f} s") if made else ("generator error", "hang")
            if not line:
                code = self.proc.wait()
                name = signal.Signals(-code).name if code < 0 and -code in signal.Signals._value2member_map_ else ""
                return "native abort", f"worker died ({name or f'exit {code}'})"
            if line == b"made\n":
                made = True
                continue
            answer = json.loads(line)
            return str(answer["outcome"]), str(answer["detail"])

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def run_campaign(reader: str, seeds: range, timeout_s: float, progress: Callable[[str], None] | None = None) -> Tally:
    """Every seed of one reader through one worker, restarted after a hang or a death."""
    tally = Tally(reader)
    started = time.monotonic()
    worker = Worker()
    try:
        for n, seed in enumerate(seeds, 1):
            outcome, detail = worker.ask(reader, seed, timeout_s)
            tally.add(seed, outcome, detail)
            if outcome in ("hang", "native abort") or detail == "hang":
                worker.kill()
                worker = Worker()
            if progress and n % 100 == 0:
                progress(f"{reader}: {n}/{len(seeds)} {dict(tally.outcomes)}")
    finally:
        worker.close()
    tally.seconds = time.monotonic() - started
    return tally


if __name__ == "__main__":
    worker()
