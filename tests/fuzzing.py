"""Bad inputs for every reader of outside input, and the contract they are held to: a record, or one
PerfgateError line naming the file; never a traceback, never a hang, never a native crash.

Shared by tests/test_fuzz.py (hypothesis, bounded for CI) and scripts/fuzz_campaign.py (thousands of
inputs). Each kind has a generator `make(rng, tmp) -> input` that mutates a real recorded file (or a
real config) and a `read(input)` that runs the reader the way perfgate does.
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import io
import json
import random
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
H100 = DATA / "h100"
ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**63,
    -(2**63),
    1e308,
    -1e308,
    1e-320,
    0.5,
    "",
    "x" * 300,
    "1.0",
    "nan",
    "NaN",
    "Infinity",
    "\x00",
    "é",
    [],
    {},
    [1, 2],
    {"a": 1},
    [[[[[]]]]],
]


def odd_value(rng: random.Random) -> Any:
    if rng.random() < 0.1:
        depth = rng.randint(50, 3000)
        return {"deep": "[" * depth + "]" * depth} if depth < 900 else "[" * depth  # deep (as text) or unbalanced
    return copy.deepcopy(rng.choice(ODD_VALUES))  # never one object in two places (a cycle)


# --- JSON documents -------------------------------------------------------------------------------


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if len(prefix) > 30:
        return out
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:20]):
            out += _paths(v, prefix + (i,))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any, delete: bool = False) -> Any:
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


def mutate_obj(doc: Any, rng: random.Random, rounds: int = 3) -> Any:
    """The document with a few values replaced by odd ones or deleted (structure-level mutations)."""
    doc = json.loads(json.dumps(doc))
    for _ in range(rng.randint(1, rounds)):
        paths = _paths(doc)
        path = rng.choice(paths)
        if path and rng.random() < 0.3:
            doc = _set(doc, path, None, delete=True)
        else:
            doc = _set(doc, path, odd_value(rng))
    return doc


def mutate_json(doc: Any, rng: random.Random, rounds: int = 3) -> str:
    """Structure-level mutations, then sometimes text-level ones (truncation, NaN, a lost quote)."""
    text = json.dumps(mutate_obj(doc, rng, rounds), allow_nan=True)
    text = text.replace('{"deep": "', "").replace(']"}', "]")  # the deep nesting, as real JSON text
    roll = rng.random()
    if roll < 0.1:
        text = text[: rng.randint(0, len(text))]  # truncated
    elif roll < 0.2:
        text = text.replace("1", "NaN", 1)
    elif roll < 0.25:
        text = text.replace('"', "", 1)
    return text


def write(tmp: Path, name: str, content: str | bytes) -> Path:
    path = tmp / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
    else:
        path.write_bytes(content)
    return path


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    roll = rng.random()
    if roll < 0.3 or not b:
        return bytes(b[: rng.randint(0, len(b))])
    for _ in range(rng.randint(1, 16)):
        i = rng.randrange(len(b))
        b[i] = rng.randrange(256)
    if roll > 0.9:
        i = rng.randrange(len(b))
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    return bytes(b)


# --- SQLite files -----------------------------------------------------------------------------------


def mutate_sqlite(source: Path, rng: random.Random, tmp: Path, name: str) -> Path:
    path = tmp / name
    shutil.copy(source, path)
    if rng.random() < 0.2:
        return write(tmp, name, mutate_bytes(path.read_bytes(), rng))
    con = sqlite3.connect(path)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for _ in range(rng.randint(1, 4)):
            table = rng.choice(tables)
            cols = [r[1] for r in con.execute(f"PRAGMA table_info('{table}')")]
            action = rng.random()
            with contextlib.suppress(sqlite3.DatabaseError):
                if action < 0.15:
                    con.execute(f"DROP TABLE '{table}'")
                    tables.remove(table)
                elif action < 0.35 and cols:
                    col = rng.choice(cols)
                    con.execute(f"ALTER TABLE '{table}' RENAME COLUMN '{col}' TO '{col}_renamed'")
                elif action < 0.8 and cols:
                    col = rng.choice(cols)
                    value = rng.choice([None, "text", b"\x00blob", -1, 2**62, 1.5, float("inf"), ""])
                    where = rng.choice(["", " WHERE rowid % 7 = 0", " WHERE rowid = 1"])
                    con.execute(f"UPDATE '{table}' SET '{col}' = ?{where}", (value,))
                else:
                    con.execute(f"DELETE FROM '{table}' WHERE rowid % 2 = 0")
        con.commit()
    finally:
        con.close()
    return path


# --- the kinds ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    name: str
    make: Callable[[random.Random, Path], Any]
    read: Callable[[Any], Any]


def _baseline_doc() -> Any:
    return json.loads((H100 / "profiled_baseline.json").read_text())


def make_baseline(rng: random.Random, tmp: Path) -> Path:
    return write(tmp, "b.json", mutate_json(_baseline_doc(), rng))


def read_baseline(path: Path) -> Any:
    from perfgate.baseline import load_baseline

    return load_baseline(path)


def make_config(rng: random.Random, tmp: Path) -> Any:
    table: dict[str, Any] = {
        "threshold_pct": 3.0,
        "alpha": 0.01,
        "min_samples": 20,
        "max_samples": 200,
        "metrics": {"dram__bytes_read.sum": 2.0},
        "overrides": [{"pattern": "*matmul*", "threshold_pct": 10.0}],
        "db": "h.db",
    }
    return mutate_obj(table, rng) if rng.random() < 0.9 else odd_value(rng)


def read_config(table: Any) -> Any:
    from perfgate.config.settings import settings_from_config

    return settings_from_config(table) if isinstance(table, dict) else settings_from_config({"x": table})


def make_toml(rng: random.Random, tmp: Path) -> Path:
    text = '[tool.perfgate]\nthreshold_pct = 3.0\nmin_samples = 20\n[[tool.perfgate.overrides]]\npattern = "*"\n'
    data = (
        mutate_bytes(text.encode(), rng)
        if rng.random() < 0.5
        else text.replace("3.0", rng.choice(["nan", "inf", "-1", '"3"', "[]", "{}", "true", "1e999"])).encode()
    )
    (tmp / "pyproject.toml").write_bytes(data)
    return tmp


def read_toml(root: Path) -> Any:
    from perfgate.config.project import project_settings

    return project_settings(root)


def make_marker(rng: random.Random, tmp: Path) -> Any:
    kwargs = {"threshold_pct": 5, "metrics": {"dram__bytes_read.sum": 1}, "min_samples": 10, "min_speedup": 1.2}
    return mutate_obj(kwargs, rng) if rng.random() < 0.9 else {"x": odd_value(rng)}


def read_marker(kwargs: Any) -> Any:
    from perfgate.config.settings import marker_options

    return marker_options(kwargs if isinstance(kwargs, dict) else {"threshold_pct": kwargs}, "fuzz::case")


def make_history(rng: random.Random, tmp: Path) -> Path:
    return mutate_sqlite(DATA / "history_v1.db", rng, tmp, "h.db")


def read_history(path: Path) -> Any:
    from perfgate.store import open_store

    with open_store(path, readonly=True) as store:
        runs = [store.load_run(rid) for rid in store.run_ids()]
        store.history("t.py::a")
    return runs


def make_nsys(rng: random.Random, tmp: Path) -> Path:
    return mutate_sqlite(H100 / "perfgate-nsys.sqlite", rng, tmp, "x.sqlite")


def read_nsys(path: Path) -> Any:
    from perfgate.analyze.nsys_summary import summarize_nsys
    from perfgate.parse.nsys_sqlite import read_nsys_sqlite

    return read_nsys_sqlite(path), summarize_nsys(path, "nsys-sqlite", with_spans=True)


_NCU_BYTES: list[bytes] = []


def _ncu_bytes() -> bytes:
    if not _NCU_BYTES:
        _NCU_BYTES.append(gzip.decompress((H100 / "perfgate-ncu.ncu-rep.gz").read_bytes()))
    return _NCU_BYTES[0]


def make_ncu_rep(rng: random.Random, tmp: Path) -> Path:
    return write(tmp, "x.ncu-rep", mutate_bytes(_ncu_bytes(), rng))


def read_ncu_rep(path: Path) -> Any:
    from perfgate.parse.ncu_report_file import read_ncu_report

    return read_ncu_report(path)


def make_ncu_csv(rng: random.Random, tmp: Path) -> Path:
    text = (H100 / "perfgate-ncu_raw.csv").read_text()
    if rng.random() < 0.5:
        return write(tmp, "x.csv", mutate_bytes(text.encode(), rng))
    lines = text.splitlines()
    for _ in range(rng.randint(1, 5)):
        i = rng.randrange(len(lines))
        cells = lines[i].split(",")
        j = rng.randrange(len(cells))
        cells[j] = str(odd_value(rng))
        lines[i] = ",".join(cells)
    return write(tmp, "x.csv", "\n".join(lines))


def read_ncu_csv(path: Path) -> Any:
    from perfgate.parse.ncu_csv import read_ncu_csv

    return read_ncu_csv(path)


def make_torch(rng: random.Random, tmp: Path) -> Path:
    doc = json.loads((DATA / "torch_trace.json").read_text())
    return write(tmp, "t.json", mutate_json(doc, rng, rounds=6))


def read_torch(path: Path) -> Any:
    from perfgate.analyze.torch_summary import summarize_torch
    from perfgate.parse.torch_trace import read_torch_trace

    return read_torch_trace(path), summarize_torch(path, "torch-json", with_spans=True)


def _benchmark_doc() -> Any:
    stats = {
        "min": 0.001,
        "max": 0.003,
        "mean": 0.002,
        "stddev": 0.0001,
        "rounds": 10,
        "median": 0.002,
        "iqr": 0.0001,
        "q1": 0.0019,
        "q3": 0.0021,
        "data": [0.002] * 10,
    }
    return {
        "machine_info": {"node": "h", "cpu": {"brand_raw": "CPU"}, "python_version": "3.11"},
        "commit_info": {"id": "abc", "branch": "main", "dirty": False},
        "datetime": "2026-11-22T00:00:00",
        "benchmarks": [
            {"name": "test_a", "fullname": "t.py::test_a", "stats": stats},
            {"name": "test_b", "fullname": "t.py::test_b", "stats": dict(stats)},
        ],
    }


def make_benchmark_json(rng: random.Random, tmp: Path) -> Path:
    return write(tmp, "bench.json", mutate_json(_benchmark_doc(), rng))


def read_benchmark_json(path: Path) -> Any:
    from perfgate.parse.pytest_benchmark import read_pytest_benchmark

    return read_pytest_benchmark(path)


def _results_doc() -> Any:
    return {
        "perfgate_json_version": 2,
        "gate": {"strict": True, "failed": True},
        "comparisons": [
            {
                "case_id": "t::a",
                "metric": "median_ms",
                "verdict": "regressed",
                "change_pct": 5.0,
                "threshold_pct": 1.2,
                "kernel": "",
            },
            {"case_id": "t::b", "metric": "min_speedup", "verdict": "below target", "note": "x"},
        ],
        "findings": [{"kind": "test skipped", "message": "m", "case_id": "t::a", "fails_strict": True}],
        "cases": [{"case_id": "t::a", "location": ["t.py", 3]}],
    }


def make_results_json(rng: random.Random, tmp: Path) -> Path:
    return write(tmp, "r.json", mutate_json(_results_doc(), rng))


def read_results_json(path: Path) -> Any:
    from perfgate.cli import main

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["ci", "annotate", str(path)])
    return _exit(code, err.getvalue(), "ci annotate")


def _exit(code: int, stderr: str, what: str) -> int:
    """A command's contract: exit 0, or exit 2 (4: input that contradicts itself) with one line on stderr
    (raised here as the clean error)."""
    from perfgate.errors import PerfgateError

    if code in (2, 4) and len(stderr.strip().splitlines()) == 1:
        raise PerfgateError(stderr.strip())
    if code != 0:
        raise AssertionError(f"{what} exited {code} with {stderr!r}")
    return code


def make_child_output(rng: random.Random, tmp: Path) -> Path:
    from perfgate.codec import case_to_dict
    from tests.helpers import make_run

    run = make_run({"t::a": [1.0, 2.0, 3.0]})
    doc = {
        "results": [case_to_dict(r) for r in run.results],
        "unmeasured": [],
        "environment": {"device_kind": "host", "device_name": "x"},
    }
    return write(tmp, "child.json", mutate_json(doc, rng, rounds=5))


def read_child_output(path: Path) -> Any:
    from perfgate.measure.processes import parse_child_output

    return parse_child_output(path, 0)


def make_any_file(rng: random.Random, tmp: Path) -> Path:
    """Whatever a user might pass to `perfgate analyze`: a mutated file of any kind under any name."""
    maker = rng.choice([make_nsys, make_ncu_csv, make_torch, make_baseline, make_ncu_rep])
    path = maker(rng, tmp)
    new = tmp / rng.choice(["a.sqlite", "a.ncu-rep", "a.csv", "a.json", "a.json.gz", "a.nsys-rep", "a.qdstrm", "a"])
    if new != path:
        shutil.move(path, new)
    return new


def read_any_file(path: Path) -> Any:
    """`perfgate analyze --format json` end to end: exit 0 with strict JSON on stdout, or exit 2."""
    from perfgate.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["analyze", str(path), "--format", "json"])
    if code == 0:
        json.loads(out.getvalue(), parse_constant=_no_constant)
    return _exit(code, err.getvalue(), "analyze")


def _no_constant(name: str) -> Any:
    raise AssertionError(f"{name} in JSON output")


KINDS = {
    k.name: k
    for k in (
        Kind("config", make_config, read_config),
        Kind("pyproject", make_toml, read_toml),
        Kind("marker", make_marker, read_marker),
        Kind("baseline", make_baseline, read_baseline),
        Kind("history", make_history, read_history),
        Kind("nsys-sqlite", make_nsys, read_nsys),
        Kind("ncu-rep", make_ncu_rep, read_ncu_rep),
        Kind("ncu-csv", make_ncu_csv, read_ncu_csv),
        Kind("torch-json", make_torch, read_torch),
        Kind("pytest-benchmark", make_benchmark_json, read_benchmark_json),
        Kind("results-json", make_results_json, read_results_json),
        Kind("child-output", make_child_output, read_child_output),
        Kind("analyze-cli", make_any_file, read_any_file),
    )
}


def check(kind: Kind, value: Any) -> str:
    """Run the reader; 'ok' or 'clean error'. Anything else propagates: that is a finding."""
    from perfgate.errors import PerfgateError

    try:
        kind.read(value)
    except PerfgateError as err:
        if "\n" in str(err):
            raise AssertionError(f"multi-line error: {err!r}") from err
        return "clean error"
    return "ok"
