"""The scale benchmark (issue 11): perfgate against direct references on inputs built by replicating
recorded H100 captures (scripts/scale_inputs.py). CPU time of each measured process (user + system),
peak RSS for analyze, and the scaling exponent (log time / log size) per input kind.

    python scripts/bench_scale.py [--sizes 100000,1000000,5000000] [--out docs/performance-results.md]
    python scripts/bench_scale.py --perfgate-src /path/to/old/checkout     # the same rows for another version

Every row runs in a fresh process, so imports and caches are paid as a user pays them. Counts are
checked: the replicated export must hold copies x the recorded kernels, and perfgate's kernel summary
must equal the SQL reference's count and total for every kernel.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from scale_inputs import build_nsys, build_torch, recorded_kernels  # noqa: E402

PY = sys.executable


def measure(code: str, src: Path, stdin_files: tuple[Path, ...] = ()) -> tuple[float, float, str]:
    """Run `code` in a fresh interpreter with perfgate from `src`; (CPU seconds, peak RSS MB, stdout)."""
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT / 'scripts'}"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([PY, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark step failed: {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, after.ru_maxrss / 1024, proc.stdout


SQL_GROUP_BY = """
import sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1] if len(sys.argv) > 1 else PATH}?mode=ro", uri=True)
rows = con.execute("select demangledName, count(*), sum(end - start), min(end - start), max(end - start) "
                   "from CUPTI_ACTIVITY_KIND_KERNEL group by demangledName").fetchall()
print(sum(r[1] for r in rows), sum(r[2] for r in rows))
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

ANALYZE = """
import contextlib, io, json
from perfgate.cli import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    assert main(["analyze", PATH, "--format", "json"]) == 0
doc = json.loads(buf.getvalue())
print(sum(k["count"] for k in doc["kernels"]), sum(k["total_ns"] for k in doc["kernels"]))
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
from perfgate.baseline_write import updated_baseline
from perfgate.compare import compare_run
from perfgate.settings import settings_from_config
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
# the reference: the same rows with plain executemany into the same tables, one transaction
con = sqlite3.connect(DB, isolation_level=None)
cases = [(2, r.case_id, "cuda_event", r.timing.n_samples, r.timing.median_ms) for r in run.results]
samples = [(2, r.case_id, i, v) for r in run.results for i, v in enumerate(r.samples_ms)]
t = time.process_time()
con.execute("begin")
con.execute("insert into runs (id) values (2)")
con.executemany("insert into cases (run_id, case_id, timer, n_samples, median_ms) values (?, ?, ?, ?, ?)", cases)
con.executemany("insert into samples (run_id, case_id, idx, time_ms) values (?, ?, ?, ?)", samples)
con.execute("commit")
print(ours, time.process_time() - t)
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
        ref, _, ref_out = measure(define(SQL_GROUP_BY, PATH=str(path)), src)
        assert out.split() == ref_out.split(), f"kernel count/total differ: {out} vs {ref_out}"
        assert int(out.split()[0]) == kernels, "the replicated export does not hold copies x the recorded kernels"
        four = measure(define(SQL_FOUR, PATH=str(path)), src)[0] if size <= 1_000_000 else None
        rows.append({"input": f"nsys export, {kernels:,} kernels", "size": kernels, "perfgate_s": ours,
                     "reference_s": ref, "reference": "SQL GROUP BY", "four_sql_s": four, "rss_mb": rss})
        path.unlink()
    return rows


def torch_rows(sizes: list[int], src: Path, tmp: Path) -> list[dict[str, object]]:
    rows = []
    for size in sizes:
        path = tmp / f"torch_{size}.json"
        build_torch(size, path)
        events = len(json.loads(path.read_text())["traceEvents"])
        ours, rss, _ = measure(define(ANALYZE, PATH=str(path)), src)
        ref, _, _ = measure(define(TORCH_REFERENCE, PATH=str(path)), src)
        rows.append({"input": f"torch trace, {events:,} events", "size": events, "perfgate_s": ours, "reference_s": ref,
                     "reference": "json.loads + group", "rss_mb": rss})
        path.unlink()
    return rows


def compare_rows(src: Path, tmp: Path) -> list[dict[str, object]]:
    rows = []
    for n in (1000, 10_000):
        _, _, out = measure(define(COMPARE, N=n), src)
        rows.append({"input": f"compare_run, {n:,} cases x 200 samples", "size": n, "perfgate_s": float(out.split()[0]),
                     "reference_s": None, "reference": ""})
    return rows


def store_rows(src: Path, tmp: Path) -> list[dict[str, object]]:
    db = tmp / "h.db"
    _, _, out = measure(define(SAVE, N=10_000, DB=str(db)), src)
    ours, ref = (float(x) for x in out.split())
    baseline = tmp / "b.json"
    # `perfgate compare` on the stored 1,000-case run: wall time of the whole command
    measure(define("""
        import random
        from pathlib import Path
        from perfgate.baseline_write import updated_baseline, write_baseline
        from perfgate.store import open_store
        from tests.helpers import make_run
        rng = random.Random(1)
        run = make_run({f"t::case{i}": [rng.gauss(1.0, 0.01) for _ in range(200)] for i in range(1000)})
        write_baseline(updated_baseline(None, run, Path(BASELINE), "x", "r"))
        with open_store(Path(DB2)) as s:
            s.save_run(make_run({f"t::case{i}": [rng.gauss(1.0, 0.01) for _ in range(200)] for i in range(1000)}))
        """, BASELINE=str(baseline), DB2=str(tmp / "c.db")), src)
    t0 = time.perf_counter()
    measure(define(COMPARE_CLI, DB=str(tmp / "c.db"), BASELINE=str(baseline)), src)
    wall = time.perf_counter() - t0
    return [{"input": "save_run, 10,000 cases x 200 samples", "size": 10_000, "perfgate_s": ours, "reference_s": ref,
             "reference": "plain executemany"},
            {"input": "`perfgate compare`, stored 1,000-case run (wall, whole command)", "size": 1000,
             "perfgate_s": wall, "reference_s": None, "reference": ""}]


def exponent(rows: list[dict[str, object]], prefix: str) -> float | None:
    pts = [(float(r["size"]), float(r["perfgate_s"])) for r in rows if str(r["input"]).startswith(prefix)]  # type: ignore[arg-type]
    if len(pts) < 2:
        return None
    (x0, y0), (x1, y1) = pts[0], pts[-1]
    return math.log(y1 / y0) / math.log(x1 / x0)


def render(rows: list[dict[str, object]]) -> str:
    lines = ["| input | perfgate (CPU s) | direct reference (CPU s) | ratio | all four summaries in SQL | peak RSS |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        ref = r.get("reference_s")
        ratio = f"{float(r['perfgate_s']) / float(ref):.2f}x" if ref else "-"  # type: ignore[arg-type]
        four = f"{r['four_sql_s']:.1f}" if r.get("four_sql_s") else "-"
        rss = f"{r['rss_mb']:.0f} MB" if r.get("rss_mb") else "-"
        refs = f"{ref:.2f} ({r['reference']})" if ref else "-"
        lines.append(f"| {r['input']} | {float(r['perfgate_s']):.2f} | {refs} | {ratio} | {four} | {rss} |")  # type: ignore[arg-type]
    for prefix in ("nsys", "torch", "compare_run"):
        e = exponent(rows, prefix)
        if e is not None:
            lines.append(f"\nScaling exponent, {prefix}: {e:.2f} (time ~ size^{e:.2f})")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000,5000000")
    parser.add_argument("--torch-sizes", default="100000,1000000")
    parser.add_argument("--perfgate-src", type=Path, default=ROOT)
    parser.add_argument("--skip", default="", help="comma list of: nsys,torch,compare,store")
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
    text = render(rows)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
