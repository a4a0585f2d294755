"""The scale benchmark (issue 11): perfgate against direct references on inputs built by replicating
recorded H100 captures (scripts/scale_inputs.py). CPU time of each measured process (user + system),
peak RSS for analyze, and the scaling exponent (log time / log size) per input kind.

    python scripts/bench_scale.py [--sizes 100000,1000000,5000000] [--ncu-report R.ncu-rep] [--out results.md]
    python scripts/bench_scale.py --perfgate-src /path/to/old/checkout     # the same rows for another version
    python scripts/bench_scale.py --skip nsys,torch,compare,store,history --history-runs 1000,10000
        # only the history at scale (scripts/bench_history.py): bytes per case-run, prune, post-step, window

The gate beside plain pytest and the summary/comment rendering are in scripts/bench_reports.py
(`--gate-sizes`, `--report-sizes`; `--skip gate,reports` leaves them out).

Results and how to read them: docs/performance.md.

Every row runs in a fresh process, so imports and caches are paid as a user pays them. Counts are
checked: the replicated export must hold copies x the recorded kernels, and perfgate's kernel summary
must equal the SQL reference's count, total, min and max for every kernel (a digest of the rows). The
recorded export's summaries equal `nsys stats` in tests/test_parse_nsys.py.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from bench_reports import gate_overhead_rows, render_reports, report_rows  # noqa: E402
from scale_inputs import build_nsys, build_torch, recorded_kernels  # noqa: E402

PY = sys.executable


# Runs the measured interpreter and reports its own usage. The extra process matters for peak RSS: on
# Linux, exec() records the exec'ing process's old high-water RSS into the new program's maxrss, so a
# program started straight from this (large, input-building) benchmark would inherit our RSS. The
# launcher is small when it starts the measured program.
LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}")
"""


def measure(code: str, src: Path) -> tuple[float, float, str]:
    """Run `code` in a fresh interpreter with perfgate from `src`; (CPU seconds, peak RSS MB, stdout).

    CPU and RSS are that interpreter's own (its waited-for children included: the isolated ncu reader)."""
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT / 'scripts'}"}
    with tempfile.TemporaryDirectory(prefix="perfgate-measure-") as tmp:
        usage_file = Path(tmp) / "usage"
        # cwd: `python -c` puts the working directory first on sys.path, ahead of PYTHONPATH: run from the
        # repository, it would import this checkout's perfgate whatever --perfgate-src says
        proc = subprocess.run(
            [PY, "-c", LAUNCHER, str(usage_file), PY, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            cwd=tmp,
        )
        if proc.returncode != 0 or not usage_file.exists():
            raise RuntimeError(f"benchmark step failed: {proc.stderr[-2000:]}")
        status, cpu_s, maxrss_kb = usage_file.read_text().split()
    if status != "0":
        raise RuntimeError(f"benchmark step failed (exit {status}): {proc.stderr[-2000:]}")
    return float(cpu_s), float(maxrss_kb) / 1024, proc.stdout


SQL_GROUP_BY = """
import hashlib, sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1] if len(sys.argv) > 1 else PATH}?mode=ro", uri=True)
rows = con.execute("select s.value, g.c, g.t, g.lo, g.hi from (select demangledName as d, count(*) as c, "
                   "sum(end - start) as t, min(end - start) as lo, max(end - start) as hi "
                   "from CUPTI_ACTIVITY_KIND_KERNEL group by demangledName) g "
                   "left join StringIds s on s.id = g.d").fetchall()
digest = hashlib.sha256(repr(sorted(rows)).encode()).hexdigest()[:16]
print(sum(r[1] for r in rows), sum(r[2] for r in rows), digest)
"""

# The four summaries with nsys stats' definitions (median and sample stddev included), in SQL alone.
SQL_FOUR = """
import sqlite3
con = sqlite3.connect(f"file:{PATH}?mode=ro", uri=True)
def summary(table, key, where=""):
    return con.execute(f'''with d as (select {key} as k, end - start as x from {table} {where}),
        r as (select k, x, row_number() over (partition by k order by x) as i,
              count(*) over (partition by k) as n from d),
        m as (select k, avg(x) as med from r where i in ((n + 1) / 2, (n + 2) / 2) group by k),
        s as (select k, count(*) as c, sum(x) as t, avg(x) as a, min(x) as lo, max(x) as hi from d group by k)
        select s.k, s.c, s.t, s.a, m.med, s.lo, s.hi,
               sqrt((select sum((x - s.a) * (x - s.a)) from d where d.k = s.k) / max(s.c - 1, 1))
        from s join m on m.k = s.k''').fetchall()
out = [summary("CUPTI_ACTIVITY_KIND_KERNEL", "demangledName"), summary("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId"),
       summary("CUPTI_ACTIVITY_KIND_MEMSET", "1"), summary("NVTX_EVENTS", "text", "where eventType in (59, 60)")]
print(sum(r[1] for r in out[0]), sum(r[2] for r in out[0]))
"""

# Per kernel (name, count, total, min, max): the digest must equal the SQL reference's.
ANALYZE = """
import contextlib, hashlib, io, json
from perfgate.cli import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    assert main(["analyze", PATH, "--format", "json"]) == 0
doc = json.loads(buf.getvalue())
rows = [(k["name"], k["count"], k["total_ns"], k["min_ns"], k["max_ns"]) for k in doc["kernels"]]
digest = hashlib.sha256(repr(sorted(rows)).encode()).hexdigest()[:16]
print(sum(k["count"] for k in doc["kernels"]), sum(k["total_ns"] for k in doc["kernels"]), digest)
"""

TORCH_REFERENCE = """
import json
from collections import defaultdict
doc = json.loads(open(PATH).read())
groups = defaultdict(list)
for e in doc["traceEvents"]:
    if e.get("ph") == "X":
        groups[(e.get("cat"), e.get("name"))].append(e.get("dur", 0))
print(sum(len(v) for (c, _), v in groups.items() if c == "kernel"), len(groups))
"""

COMPARE = """
import random
from perfgate.baseline.write import updated_baseline
from perfgate.gate.compare import compare_run
from perfgate.config.settings import settings_from_config
from tests.helpers import make_run
rng = random.Random(0)
base_run = make_run({f"t::case{i}": [rng.gauss(1.0, 0.01) for _ in range(200)] for i in range(N)})
cur = make_run({f"t::case{i}": [rng.gauss(1.01, 0.01) for _ in range(200)] for i in range(N)})
from pathlib import Path
base = updated_baseline(None, base_run, Path("b.json"), "x", "r")
import time
t = time.process_time()
gate = compare_run(cur.results, base, cur.environment, settings_from_config({}))
print(time.process_time() - t, len(gate.comparisons))
"""

COMPARE_CLI = """
import contextlib, io, time
from perfgate.cli import main
t = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["compare", "--db", DB, "--baseline-file", BASELINE])
print(time.perf_counter() - t, code)
"""

SAVE = """
import random, sqlite3, time
from perfgate.store import open_store
from tests.helpers import make_run
rng = random.Random(0)
run = make_run({f"t::case{i}": [rng.gauss(1.0, 0.01) for _ in range(200)] for i in range(N)})
store = open_store(DB)
t = time.process_time()
store.save_run(run)
ours = time.process_time() - t
store.close()
# the reference: the same rows with plain executemany into the same tables, one transaction (samples
# packed as the store packs them, one array per case)
import struct
con = sqlite3.connect(DB, isolation_level=None)
t = time.process_time()
cases = [(2, r.case_id, "cuda_event", r.timing.n_samples, r.timing.median_ms,
          struct.pack(f"<{len(r.samples_ms)}d", *r.samples_ms)) for r in run.results]
con.execute("begin")
con.execute("insert into runs (id) values (2)")
con.executemany("insert into cases (run_id, case_id, timer, n_samples, median_ms, samples_f64) "
                "values (?, ?, ?, ?, ?, ?)", cases)
con.execute("commit")
print(ours, time.process_time() - t)
"""


NCU_REFERENCE = """
import ncu_report
ctx = ncu_report.load_report(PATH)
launches = 0
for r in range(ctx.num_ranges()):
    rng = ctx.range_by_idx(r)
    for a in range(rng.num_actions()):
        action = rng.action_by_idx(a)
        launches += 1
        for name in action.metric_names():
            m = action.metric_by_name(name)
            value = m.as_string() if m.kind() == 2 else m.as_double()
            unit = m.unit()
print(launches)
"""

NCU_PERFGATE = """
from pathlib import Path
from perfgate.parse.ncu_report_file import read_ncu_report
print(len(read_ncu_report(Path(PATH))))
"""


def define(code: str, **names: object) -> str:
    return "\n".join(f"{k} = {v!r}" for k, v in names.items()) + "\n" + textwrap.dedent(code)


def nsys_rows(sizes: list[int], src: Path, tmp: Path) -> list[dict[str, object]]:
    rows = []
    for size in sizes:
        path = tmp / f"nsys_{size}.sqlite"
        copies = build_nsys(size, path)
        kernels = copies * recorded_kernels()
        ours, rss, out = measure(define(ANALYZE, PATH=str(path)), src)
        ref, ref_rss, ref_out = measure(define(SQL_GROUP_BY, PATH=str(path)), src)
        assert out.split() == ref_out.split(), f"per-kernel count/total/min/max differ: {out} vs {ref_out}"
        assert int(out.split()[0]) == kernels, "the replicated export does not hold copies x the recorded kernels"
        four = measure(define(SQL_FOUR, PATH=str(path)), src)[0] if size <= 1_000_000 else None
        rows.append(
            {
                "input": f"nsys export, {kernels:,} kernels",
                "size": kernels,
                "perfgate_s": ours,
                "reference_s": ref,
                "reference": "SQL GROUP BY",
                "four_sql_s": four,
                "rss_mb": rss,
                "ref_rss_mb": ref_rss,
            }
        )
        path.unlink()
    return rows


def torch_rows(sizes: list[int], src: Path, tmp: Path) -> list[dict[str, object]]:
    rows = []
    for size in sizes:
        path = tmp / f"torch_{size}.json"
        build_torch(size, path)
        events = len(json.loads(path.read_text())["traceEvents"])
        ours, rss, _ = measure(define(ANALYZE, PATH=str(path)), src)
        ref, ref_rss, _ = measure(define(TORCH_REFERENCE, PATH=str(path)), src)
        rows.append(
            {
                "input": f"torch trace, {events:,} events",
                "size": events,
                "perfgate_s": ours,
                "reference_s": ref,
                "reference": "json.loads + group",
                "rss_mb": rss,
                "ref_rss_mb": ref_rss,
            }
        )
        path.unlink()
    return rows


def compare_rows(src: Path, tmp: Path) -> list[dict[str, object]]:
    rows = []
    for n in (1000, 10_000):
        _, _, out = measure(define(COMPARE, N=n), src)
        rows.append(
            {
                "input": f"compare_run, {n:,} cases x 200 samples",
                "size": n,
                "perfgate_s": float(out.split()[0]),
                "reference_s": None,
                "reference": "",
            }
        )
    return rows


def store_rows(src: Path, tmp: Path) -> list[dict[str, object]]:
    db = tmp / "h.db"
    _, _, out = measure(define(SAVE, N=10_000, DB=str(db)), src)
    ours, ref = (float(x) for x in out.split())
    baseline = tmp / "b.json"
    # `perfgate compare` on the stored 1,000-case run: wall time of the whole command
    measure(
        define(
            """
        import random
        from pathlib import Path
        from perfgate.baseline.write import updated_baseline, write_baseline
        from perfgate.store import open_store
        from tests.helpers import make_run
        rng = random.Random(1)
        run = make_run({f"t::case{i}": [rng.gauss(1.0, 0.01) for _ in range(200)] for i in range(1000)})
        write_baseline(updated_baseline(None, run, Path(BASELINE), "x", "r"))
        with open_store(Path(DB2)) as s:
            s.save_run(make_run({f"t::case{i}": [rng.gauss(1.0, 0.01) for _ in range(200)] for i in range(1000)}))
        """,
            BASELINE=str(baseline),
            DB2=str(tmp / "c.db"),
        ),
        src,
    )
    t0 = time.perf_counter()
    measure(define(COMPARE_CLI, DB=str(tmp / "c.db"), BASELINE=str(baseline)), src)
    wall = time.perf_counter() - t0
    return [
        {
            "input": "save_run, 10,000 cases x 200 samples",
            "size": 10_000,
            "perfgate_s": ours,
            "reference_s": ref,
            "reference": "plain executemany",
        },
        {
            "input": "`perfgate compare`, stored 1,000-case run (wall, whole command)",
            "size": 1000,
            "perfgate_s": wall,
            "reference_s": None,
            "reference": "",
        },
    ]


HISTORY_BUILD = """
import random, sqlite3
from pathlib import Path
from perfgate.store import open_store
from tests.helpers import make_run
rng = random.Random(2)
with open_store(Path(DB)) as s:
    for r in range(RUNS):
        s.save_run(make_run({f"t::case{i}": [rng.gauss(1.0, 0.01) for _ in range(50)] for i in range(CASES)}))
con = sqlite3.connect(DB)
print(con.execute("select count(*) from runs").fetchone()[0], con.execute("select count(*) from cases").fetchone()[0])
"""

HISTORY_QUERY = """
import contextlib, io, time
from perfgate.cli import main
t = time.perf_counter()
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    code = main(ARGS)
print(time.perf_counter() - t, code, buf.getvalue().count(chr(10)))
"""


def history_rows(src: Path, tmp: Path, runs: int = 1000, cases: int = 50) -> list[dict[str, object]]:
    """A history of 1,000 runs: the trend of one case and the latest runs, wall time of the command."""
    db = tmp / "history.db"
    _, _, out = measure(define(HISTORY_BUILD, DB=str(db), RUNS=runs, CASES=cases), src)
    assert out.split() == [str(runs), str(runs * cases)], f"history build stored {out}"
    rows = []
    for label, argv, lines in (
        (
            f"`perfgate history --case t::case7`, {runs:,} runs x {cases} cases (wall, whole command)",
            ["history", "--db", str(db), "--case", "t::case7", "--last", str(runs)],
            runs + 2,
        ),
        (
            f"`perfgate history --last 50`, {runs:,} runs (wall, whole command)",
            ["history", "--db", str(db), "--last", "50"],
            50 + 2,
        ),
    ):
        t0 = time.perf_counter()
        _, _, q = measure(define(HISTORY_QUERY, ARGS=argv), src)
        wall = time.perf_counter() - t0
        assert q.split()[1] == "0" and int(q.split()[2]) == lines, f"history printed {q}"
        rows.append({"input": label, "size": runs, "perfgate_s": wall, "reference_s": None, "reference": ""})
    return rows


def ncu_rows(report: Path, src: Path) -> list[dict[str, object]]:
    """perfgate's read (isolated child included: its CPU counts) against ncu_report's own loop over every
    launch's metrics (kind, value, unit): the per-launch cost NVIDIA's reader sets."""
    ours, rss, out = measure(define(NCU_PERFGATE, PATH=str(report)), src)
    ref, ref_rss, ref_out = measure(define(NCU_REFERENCE, PATH=str(report)), src)
    assert out.split() == ref_out.split(), f"launch counts differ: {out} vs {ref_out}"
    return [
        {
            "input": f"ncu report, {int(out.split()[0]):,} launches (all metrics)",
            "size": int(out.split()[0]),
            "perfgate_s": ours,
            "reference_s": ref,
            "reference": "ncu_report loop",
            "rss_mb": rss,
            "ref_rss_mb": ref_rss,
        }
    ]


ANALYZE_TO_DIR = """
from perfgate.cli import main
assert main(["analyze", PATH, "--output-dir", OUT, *EXTRA]) == 0
"""


def analyze_output_rows(sizes: list[int], src: Path, tmp: Path) -> list[dict[str, object]]:
    """`perfgate analyze --output-dir` (charts, analysis.json, report.md): the whole command's CPU and peak
    RSS on an nsys export per size, and (without charts: they are the report layer's) on an ncu CSV of
    6,000 launches x 759 metrics (the recorded 6-launch export replicated: the size that took 184 s and
    3.6 GB in issue 23)."""
    rows: list[dict[str, object]] = []
    for size in sizes:
        path = tmp / f"nsys_out_{size}.sqlite"
        kernels = build_nsys(size, path) * recorded_kernels()
        cpu, rss, _ = measure(define(ANALYZE_TO_DIR, PATH=str(path), OUT=str(tmp / f"out_{size}"), EXTRA=[]), src)
        rows.append(
            {
                "input": f"`analyze --output-dir` (charts), nsys export, {kernels:,} kernels",
                "size": kernels,
                "perfgate_s": cpu,
                "reference_s": None,
                "reference": "",
                "rss_mb": rss,
            }
        )
        path.unlink()
    csv_path = tmp / "ncu_6000.csv"
    lines = (ROOT / "tests" / "data" / "h100" / "perfgate-ncu_raw.csv").read_text().splitlines()
    body = [lines[2 + i % (len(lines) - 2)] for i in range(6000)]
    csv_path.write_text("\n".join(lines[:2] + [f'"{i}"' + r[r.index(",") :] for i, r in enumerate(body)]) + "\n")
    cpu, rss, _ = measure(
        define(ANALYZE_TO_DIR, PATH=str(csv_path), OUT=str(tmp / "out_ncu"), EXTRA=["--no-charts"]), src
    )
    rows.append(
        {
            "input": "`analyze --output-dir --no-charts`, ncu CSV, 6,000 launches x 759 metrics",
            "size": 6000,
            "perfgate_s": cpu,
            "reference_s": None,
            "reference": "",
            "rss_mb": rss,
        }
    )
    return rows


def exponent(rows: list[dict[str, object]], prefix: str) -> float | None:
    pts = [(float(r["size"]), float(r["perfgate_s"])) for r in rows if str(r["input"]).startswith(prefix)]  # type: ignore[arg-type]
    if len(pts) < 2:
        return None
    (x0, y0), (x1, y1) = pts[0], pts[-1]
    return math.log(y1 / y0) / math.log(x1 / x0)


def render(rows: list[dict[str, object]]) -> str:
    lines = [
        "| input | perfgate (CPU s) | direct reference (CPU s) | ratio | all four summaries in SQL "
        "| peak RSS perfgate / reference |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ref = r.get("reference_s")
        ratio = f"{float(r['perfgate_s']) / float(ref):.2f}x" if ref else "-"  # type: ignore[arg-type]
        four = f"{r['four_sql_s']:.1f}" if r.get("four_sql_s") else "-"
        rss = f"{r['rss_mb']:.0f} MB" if r.get("rss_mb") else "-"
        if r.get("ref_rss_mb"):
            rss += f" / {r['ref_rss_mb']:.0f} MB"
        refs = f"{ref:.2f} ({r['reference']})" if ref else "-"
        lines.append(f"| {r['input']} | {float(r['perfgate_s']):.2f} | {refs} | {ratio} | {four} | {rss} |")  # type: ignore[arg-type]
    for prefix in ("nsys", "torch", "compare_run"):
        e = exponent(rows, prefix)
        if e is not None:
            lines.append(f"\nScaling exponent, {prefix}: {e:.2f} (time ~ size^{e:.2f})")
    return "\n".join(lines) + "\n"


def _sizes(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000,5000000")
    parser.add_argument("--torch-sizes", default="100000,1000000")
    parser.add_argument("--perfgate-src", type=Path, default=ROOT)
    parser.add_argument(
        "--skip",
        default="",
        help="comma list of: nsys,torch,compare,store,history,analyze-output,history-scale,gate,reports",
    )
    parser.add_argument("--history-runs", default="1000,10000", help="stored runs for the post-step and prune rows")
    parser.add_argument("--gate-sizes", default="1000,10000", help="host cases: the gate beside plain pytest")
    parser.add_argument("--report-sizes", default="1000,10000,16000", help="cases: summary and comment rendering")
    parser.add_argument("--ncu-report", type=Path, help="an .ncu-rep to time reading (e.g. one with 1,000 launches)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="perfgate-scale-") as tmp:
        t = Path(tmp)
        if "nsys" not in skip:
            rows += nsys_rows([int(s) for s in args.sizes.split(",")], args.perfgate_src, t)
        if "torch" not in skip:
            rows += torch_rows([int(s) for s in args.torch_sizes.split(",")], args.perfgate_src, t)
        if "compare" not in skip:
            rows += compare_rows(args.perfgate_src, t)
        if "store" not in skip:
            rows += store_rows(args.perfgate_src, t)
        if "history" not in skip:
            rows += history_rows(args.perfgate_src, t)
        if "analyze-output" not in skip:
            rows += analyze_output_rows([int(s) for s in args.sizes.split(",")], args.perfgate_src, t)
        if args.ncu_report:
            rows += ncu_rows(args.ncu_report, args.perfgate_src)
        if "history-scale" not in skip:
            from bench_history import history_scale_rows
            from bench_history import render as render_history

            history_text = render_history(
                history_scale_rows(args.perfgate_src, t, [int(s) for s in args.history_runs.split(",")])
            )
        gate = [] if "gate" in skip else gate_overhead_rows(args.perfgate_src, t, _sizes(args.gate_sizes))
    reports = [] if "reports" in skip else report_rows(args.perfgate_src, _sizes(args.report_sizes))
    text = (
        render(rows)
        + ("\n" + history_text if "history-scale" not in skip else "")
        + "\n"
        + render_reports(gate, reports)
    )
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
