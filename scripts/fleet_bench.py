"""A fleet's history (issue 33): many runners writing at once, several GPU models, thousands of cases, on a
SQLite file and on a PostgreSQL server; what a gate reads at 1k/10k/100k stored runs per case; bytes per
case-run; `perfgate compare` and `db merge` beside the direct SQL/numpy way; the dashboard build per push.

    python scripts/fleet_bench.py --pg-url "$PERFGATE_TEST_PG_URL" [--writers 16] [--runs 2] [--cases 5000]
        [--depths 1000,10000,100000] [--skip writers,depth,size,compare,merge,dashboard] [--out fleet.md]

Without --pg-url (or PERFGATE_TEST_PG_URL) only SQLite is measured. Each backend gets a fresh history (a
temporary file; a schema of its own on the server, dropped afterwards). Times are wall and CPU seconds on
this machine, the writers' summed over their processes. tests/test_fleet.py runs a CI-sized fleet.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfgate.errors import StoreError  # noqa: E402
from perfgate.model import Environment, RunKind, Verdict  # noqa: E402
from perfgate.store import Store, open_store  # noqa: E402
from perfgate.store.target import HistoryTarget, ServerUrl  # noqa: E402
from perfgate.store.verdicts import MetricVerdict, RunVerdicts  # noqa: E402

GPUS = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L40S")
SAMPLES = 200


def gpu(i: int) -> Environment:
    return Environment(device_kind="cuda", device_name=GPUS[i % len(GPUS)], compute_capability="9.0")


def case_ids(n: int) -> list[str]:
    return [f"kernels/tests/test_kernels.py::test_kernel[{i}-float16-4096]" for i in range(n)]


# --- many writers at once -------------------------------------------------------------------------------


@dataclass(frozen=True)
class WriterResult:
    uids: tuple[str, ...]
    begin_wait_s: float  # waiting to begin the write transaction (SQLite: the write lock)
    in_transaction_s: float  # from BEGIN to COMMIT
    save_s: float  # save_run calls, wall, retries included
    cpu_s: float
    refused: tuple[str, ...] = ()  # runs whose store failed with StoreError (SQLite: the busy timeout ran out)


def _writer(args: tuple[HistoryTarget, int, int, int, int]) -> WriterResult:
    target, writer, runs, cases, seed = args
    import numpy as np

    from tests.helpers import make_run

    rng = np.random.default_rng(seed + writer)
    ids = case_ids(cases)
    verdicts = RunVerdicts(False, tuple(MetricVerdict(c, "median_ms", "", Verdict.UNCHANGED, 0.1, 3.0) for c in ids))
    waits = [0.0, 0.0]
    cpu0 = time.process_time()
    uids: list[str] = []
    refused: list[str] = []
    save_s = 0.0
    with open_store(target) as store:
        real = store.db.transaction

        @contextlib.contextmanager
        def timed() -> Iterator[None]:
            t0 = time.perf_counter()
            with real():
                t1 = time.perf_counter()
                waits[0] += t1 - t0
                yield
            waits[1] += time.perf_counter() - t1

        store.db.transaction = timed  # type: ignore[method-assign]
        for r in range(runs):
            run = make_run({c: row.tolist() for c, row in zip(ids, rng.normal(1.0, 0.01, (cases, SAMPLES)))})
            uid = f"w{writer}-r{r}-{uuid.uuid4().hex[:8]}"
            info = replace(run.info, run_uid=uid, kind=RunKind.GATE, git_branch="main")
            run = replace(run, info=info, environment=gpu(writer))
            t = time.perf_counter()
            try:
                store.save_run(run, verdicts)
                store.save_run(run, verdicts)  # a retry after a lost answer: nothing added
                uids.append(uid)
            except StoreError:  # what the runner's gate would report, in one line; nothing half-written
                refused.append(uid)
            save_s += time.perf_counter() - t
    return WriterResult(tuple(uids), waits[0], waits[1], save_s, time.process_time() - cpu0, tuple(refused))


def fleet_writes(target: HistoryTarget, writers: int, runs: int, cases: int, seed: int = 0) -> dict[str, Any]:
    """`writers` processes, each storing `runs` runs of `cases` cases (and each run twice); what was stored."""
    open_store(target).close()  # created and migrated before the fleet starts (each opener would queue)
    t = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(writers) as pool:
        results = pool.map(_writer, [(target, w, runs, cases, seed) for w in range(writers)])
    wall = time.perf_counter() - t
    expected = sorted(u for r in results for u in r.uids)
    refused = {u for r in results for u in r.refused}
    with open_store(target, readonly=True) as store:
        stored = sorted(r["run_uid"] for r in store.query("SELECT run_uid FROM runs"))
        case_rows = int(store.query("SELECT count(*) AS n FROM cases")[0]["n"])
        size = store.size_bytes()
    saves = writers * runs * 2
    return {
        "writers": writers,
        "runs_expected": len(expected),
        "runs_stored": len(stored),
        "refused": len(refused),  # stores the writer was told failed (StoreError, one line), not counted as lost
        "lost": len(set(expected) - set(stored)),
        "duplicated": len(stored) - len(set(stored)),
        "case_rows": case_rows,
        "case_rows_expected": len(expected) * cases,
        "wall_s": wall,
        "runs_per_s": len(expected) / wall,
        "case_rows_per_s": case_rows / wall,
        "begin_wait_s_mean": sum(r.begin_wait_s for r in results) / saves,
        "begin_wait_s_max_writer": max(r.begin_wait_s for r in results),
        "in_transaction_s_mean": sum(r.in_transaction_s for r in results) / saves,
        "cpu_s": sum(r.cpu_s for r in results),
        "bytes_per_case_run": size / max(case_rows, 1),
    }


# --- a gate's reads at depth --------------------------------------------------------------------------


def deep_history(target: HistoryTarget, runs_per_case: int, cases: int, samples: int = 20) -> None:
    """`runs_per_case` gate runs of `cases` cases on three GPU models in turn, built by the database from one
    template run stored through the store (the gate reads indexes, not sample arrays: `samples` kept small)."""
    from tests.helpers import make_run

    ids = case_ids(cases)
    verdicts = RunVerdicts(False, tuple(MetricVerdict(c, "median_ms", "", Verdict.UNCHANGED, 0.1, 3.0) for c in ids))
    run = make_run({c: [1.0 + 0.001 * k for k in range(samples)] for c in ids})
    run = replace(run, info=replace(run.info, run_uid="template", kind=RunKind.GATE, git_branch="main"))
    with open_store(target) as store:
        store.save_run(replace(run, environment=gpu(0)), verdicts)
        server = store.on_server
        series = (
            "SELECT generate_series(2, :n) AS i"
            if server
            else "WITH RECURSIVE s(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM s WHERE i < :n) SELECT i FROM s"
        )
        columns = [r for r in _columns(store, "runs") if r not in ("id", "run_uid", "device_name")]
        gpus = " ".join(f"WHEN {k} THEN '{g}'" for k, g in enumerate(GPUS))
        # a little noise, inside the template's quartiles (every stored median stays between q1 and q3)
        noise = "(random() - 0.5) * 0.004" if server else "((abs(random()) % 400) - 200) / 100000.0"
        with store.db.transaction():
            store.db.execute(
                f"INSERT INTO runs (id, run_uid, device_name, {', '.join(columns)}) "
                f"SELECT s.i, 'deep-' || s.i, CASE s.i % {len(GPUS)} {gpus} END, "
                f"{', '.join('t.' + c for c in columns)} "
                f"FROM ({series}) AS s CROSS JOIN runs t WHERE t.id = 1",
                {"n": runs_per_case},
            )
            cols = [c for c in _columns(store, "cases") if c not in ("run_id", "median_ms")]
            store.db.execute(
                f"INSERT INTO cases (run_id, median_ms, {', '.join(cols)}) "
                f"SELECT s.i, t.median_ms + {noise}, {', '.join('t.' + c for c in cols)} "
                f"FROM ({series}) AS s CROSS JOIN cases t WHERE t.run_id = 1",
                {"n": runs_per_case},
            )
            if server:
                store.db.execute("SELECT setval(pg_get_serial_sequence('runs', 'id'), :n)", {"n": runs_per_case})
        if server:
            store.db.execute("ANALYZE")


def _columns(store: Store, table: str) -> list[str]:
    if store.on_server:
        rows = store.query(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = :t ORDER BY ordinal_position",
            {"t": table},
        )
        return [r["column_name"] for r in rows]
    return [r["name"] for r in store.query(f"SELECT name FROM pragma_table_info('{table}')")]


OLD_RECENT_SQL = (  # what the gate's change-point look read before (every stored run of each case)
    "SELECT c.case_id, r.id, c.median_ms FROM cases c JOIN runs r ON r.id = c.run_id "
    "WHERE c.case_id IN ({ids}) AND coalesce(r.device_name, '') = :device AND r.kind = 'gate' "
    "AND r.git_branch = :branch ORDER BY c.case_id, r.id"
)


def gate_reads(target: HistoryTarget, cases: int, charted: int = 50) -> dict[str, float]:
    """What a gate of `cases` cases reads from the history (the window starts, the noise window, the
    change-point look), wall and CPU seconds, median of 3; the trend charts of `charted` cases (a gate
    charts its failing and changed ones); and the previous change-point query alone."""
    from perfgate.store.window import recent_passing_gate_medians
    from perfgate.trends.history import recent_changes

    ids = case_ids(cases)
    env = gpu(0)
    walls, cpus = [], []
    with open_store(target, readonly=True) as store:
        for _ in range(3):
            t, c = time.perf_counter(), time.process_time()
            starts = store.window_starts(env.device_name, ids)
            recent_passing_gate_medians(store, env.comparability_key(), "main", 30, ids, starts)
            recent_changes(store, ids, env.device_name, "main")
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        t = time.perf_counter()
        for cid in ids[:charted]:
            store.history(cid, env.device_name)
        charts = time.perf_counter() - t
        t = time.perf_counter()
        old = store.query(
            OLD_RECENT_SQL.format(ids=store.dialect.json_values("ids")),
            {"ids": json.dumps(ids), "device": env.device_name, "branch": "main"},
        )
        old_wall = time.perf_counter() - t
    return {
        "wall_s": sorted(walls)[1],
        "cpu_s": sorted(cpus)[1],
        f"charts_{charted}_s": charts,
        "old_query_s": old_wall,
        "old_rows": len(old),
    }


# --- the rest: compare, merge, dashboard ------------------------------------------------------------------


def size_row(tmp: Path, runs: int = 1000, cases: int = 20) -> dict[str, float]:
    """Bytes per case-run of a SQLite history after VACUUM, 200 samples a case: timing alone, and as a GPU
    gate stores a case (its GPU state, the host's state, test location and node id, the device's UUID)."""
    import numpy as np

    from perfgate.model import GpuState, HostState
    from perfgate.store.prune import compact
    from tests.helpers import make_run

    rng = np.random.default_rng(0)
    ids = case_ids(cases)
    verdicts = RunVerdicts(False, tuple(MetricVerdict(c, "median_ms", "", Verdict.UNCHANGED, 0.1, 3.0) for c in ids))
    gpu_state = GpuState(
        polls=12,
        sm_clock_mhz=1980.0,
        sm_clock_min_mhz=1755.0,
        mem_clock_mhz=2619.0,
        temperature_max_c=54.0,
        power_median_w=412.5,
        power_limit_w=700.0,
        cooldown_ms=310.0,
    )
    host = HostState(load_avg_1m=1.25, cpus=64, threads=12, cpu_mhz=3100.0, steal_pct=0.0)
    out = {}
    for full in (False, True):
        db = tmp / f"size-{full}.db"
        with open_store(db) as store:
            for _ in range(runs // 100):
                batch = []
                for _ in range(100):
                    run = make_run({c: row.tolist() for c, row in zip(ids, rng.normal(1.0, 0.01, (cases, SAMPLES)))})
                    if full:
                        results = tuple(
                            replace(
                                c,
                                gpu_state=gpu_state,
                                host_state=host,
                                location=("tests/test_k.py", 120),
                                nodeid=c.case_id,
                                device_uuid="GPU-86f98e9f-8045-e95c-e325-3c7ac9e7e8fa",
                            )
                            for c in run.results
                        )
                        run = replace(run, results=results)
                    batch.append((run, verdicts))
                store.save_runs(batch)
            compact(store)
        out["gpu_gate_bytes" if full else "timing_only_bytes"] = db.stat().st_size / (runs * cases)
    return out


def _best(f: Any, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        c = time.process_time()
        f()
        times.append(time.process_time() - c)
    return min(times)


def compare_rows(tmp: Path, cases: int = 1000) -> dict[str, float]:
    """`perfgate compare` of a stored run (in-process, CPU s) beside the direct way: the run's samples by SQL,
    the baseline's from its JSON, per case the median ratio and the rank-sum statistic in numpy."""
    import contextlib as cl
    import io
    import sqlite3

    import numpy as np

    from perfgate.baseline.write import updated_baseline, write_baseline
    from perfgate.cli import main
    from tests.helpers import make_run

    rng = np.random.default_rng(1)
    ids = case_ids(cases)
    base = tmp / "baseline.json"
    write_baseline(
        updated_baseline(None, make_run({c: rng.normal(1.0, 0.01, SAMPLES).tolist() for c in ids}), base, "x", "r")
    )
    db = tmp / "compare.db"
    with open_store(db) as store:
        for _ in range(20):
            run = make_run({c: rng.normal(1.0, 0.01, SAMPLES).tolist() for c in ids})
            store.save_run(replace(run, info=replace(run.info, kind=RunKind.GATE, git_branch="main")))

    def ours() -> None:
        with cl.redirect_stdout(io.StringIO()):
            main(["compare", "--db", str(db), "--baseline-file", str(base)])

    def direct() -> None:
        con = sqlite3.connect(db)
        rid = con.execute("SELECT max(id) FROM runs").fetchone()[0]
        cur = {
            c: np.frombuffer(b, "<f8")
            for c, b in con.execute("SELECT case_id, samples_f64 FROM cases WHERE run_id = ?", (rid,))
        }
        for cid, c in json.loads(base.read_text())["cases"].items():
            b, s = np.asarray(c["samples_ms"]), cur[cid]
            ranks = np.concatenate([b, s]).argsort().argsort() + 1.0
            _ = (np.median(s) / np.median(b), ranks[len(b) :].sum())
        con.close()

    direct()
    ours()
    mine, ref = _best(ours), _best(direct)
    return {"cases": cases, "perfgate_cpu_s": mine, "direct_cpu_s": ref, "ratio": mine / ref}


def merge_rows(tmp: Path, inputs: int = 50, runs: int = 10, cases: int = 20) -> dict[str, float]:
    """`db merge` of `inputs` runner histories beside ATTACH + INSERT ... SELECT of the same rows."""
    import shutil
    import sqlite3

    from perfgate.store.merge import merge_histories
    from tests.helpers import make_run

    files = []
    for h in range(inputs):
        path = tmp / f"runner{h}.db"
        with open_store(path) as store:
            store.save_runs(
                [(make_run({c: [1.0 + h * 1e-3] * SAMPLES for c in case_ids(cases)}), None) for _ in range(runs)]
            )
        files.append(path)

    def fresh(name: str) -> Path:
        out = tmp / name
        for p in (out, Path(f"{out}-wal"), Path(f"{out}-shm")):
            p.unlink(missing_ok=True)
        return out

    def ours() -> None:
        merge_histories(fresh("merged.db"), files)

    def direct() -> None:
        out = fresh("attached.db")
        shutil.copy(files[0], out)
        con = sqlite3.connect(out)
        con.execute("DELETE FROM cases")
        con.execute("DELETE FROM runs")
        con.commit()
        for f in files:
            con.execute("ATTACH ? AS src", (str(f),))
            off = con.execute("SELECT coalesce(max(id), 0) FROM runs").fetchone()[0]
            for table, key in (("runs", "id"), ("cases", "run_id")):
                cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})") if r[1] != key]
                con.execute(
                    f"INSERT INTO {table} ({key}, {', '.join(cols)}) "
                    f"SELECT {key} + ?, {', '.join(cols)} FROM src.{table}",
                    (off,),
                )
            con.commit()
            con.execute("DETACH src")
        con.close()

    mine, ref = _best(ours), _best(direct)
    return {"inputs": inputs, "perfgate_cpu_s": mine, "direct_cpu_s": ref, "ratio": mine / ref}


def dashboard_row(target: HistoryTarget, out: Path) -> dict[str, float]:
    """The current builder (`perfgate report --html`) on the history, per push, and what changed since the
    previous build by store/changes.py (what an incremental builder would redo)."""
    import contextlib as cl
    import io

    from perfgate.cli import main
    from perfgate.store.changes import changed_since

    with open_store(target, readonly=True) as store:
        before = changed_since(store)
        runs = len(store.run_ids())
    db = target.url if isinstance(target, ServerUrl) else str(target)
    t, c = time.perf_counter(), time.process_time()
    with cl.redirect_stdout(io.StringIO()):
        code = main(["report", "--html", str(out), "--db", db])
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    pages = sum(1 for _ in out.rglob("*.html"))
    return {
        "runs": runs,
        "series": len(before.series),
        "build_wall_s": wall,
        "build_cpu_s": cpu,
        "pages": pages,
        "exit": code,
    }


# --- running it ------------------------------------------------------------------------------------------


def _each(pg_url: str, tmp: Path, name: str) -> Iterator[tuple[str, HistoryTarget]]:
    """A fresh history per backend, one at a time: a SQLite file, then a schema of its own on the server."""
    yield "sqlite", tmp / f"{name}.db"
    if pg_url:
        from tests.backends import server_history

        os.environ.setdefault("PERFGATE_TEST_PG_URL", pg_url)
        with server_history(f"fleet_{name}") as url:
            yield "postgresql", url


def run(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    skip = set(args.skip.split(",")) if args.skip else set()
    with tempfile.TemporaryDirectory(prefix="perfgate-fleet-") as tmpdir:
        tmp = Path(tmpdir)
        if "writers" not in skip:
            for name, target in _each(args.pg_url, tmp, "writes"):
                row = fleet_writes(target, args.writers, args.runs, args.cases)
                out.setdefault("writers", {})[name] = row
                _say(f"writers {name}", row)
                row = gate_reads(target, args.cases)
                out.setdefault("fleet_gate", {})[name] = row
                _say(f"gate reads {name}, {args.cases:,} cases", row)
                if "dashboard" not in skip:
                    row = dashboard_row(target, tmp / f"site-{name}")
                    out.setdefault("dashboard", {})[name] = row
                    _say(f"dashboard {name}", row)
        if "depth" not in skip:
            for depth in args.depths:
                for name, target in _each(args.pg_url, tmp, f"depth{depth}"):
                    t = time.perf_counter()
                    deep_history(target, depth, args.depth_cases)
                    row = {
                        "runs_per_case": depth,
                        "build_s": time.perf_counter() - t,
                        **gate_reads(target, args.depth_cases),
                    }
                    out.setdefault("depth", {}).setdefault(name, []).append(row)
                    _say(f"gate reads {name} at {depth:,} runs per case", row)
        if "size" not in skip:
            out["size"] = size_row(tmp)
            _say("bytes per case-run (SQLite, after VACUUM)", out["size"])
        if "compare" not in skip:
            out["compare"] = compare_rows(tmp)
            _say("compare", out["compare"])
        if "merge" not in skip:
            out["merge"] = merge_rows(tmp)
            _say("merge", out["merge"])
    return out


def _say(what: str, row: dict[str, Any]) -> None:
    shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())
    print(f"fleet: {what}: {shown}", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pg-url", default=os.environ.get("PERFGATE_TEST_PG_URL", ""))
    p.add_argument("--writers", type=int, default=16)
    p.add_argument("--runs", type=int, default=2, help="runs per writer")
    p.add_argument("--cases", type=int, default=5000)
    p.add_argument("--depths", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10000, 100000])
    p.add_argument("--depth-cases", type=int, default=20, help="cases whose history is deep")
    p.add_argument("--skip", default="")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    result = run(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
