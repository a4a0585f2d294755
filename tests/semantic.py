"""Semantic mutations for the mutation campaign (issue 32): files that parse, whose numbers and names look
plausible, and that mean something else than a reader might take them to mean. Other producers' schemas and
category names (Kineto's old "Kernel"/"Runtime", Chrome's begin/end pairs, ncu's long CSV, hyperfine's JSON),
locale number formats ("1,5", "1.234,5"), duplicated ids and rows, statistics that contradict their own data,
plausible-but-impossible physics (a copy at 10 PB/s), and changes that must change nothing (rows, columns or
events reordered, units rescaled, thousands grouped or not, timestamps shifted, string ids renumbered).

Unlike tests/mutations.py, each input carries what a true reading of it is (`Expect`), because an invariant
cannot tell 15 from 1.5:
    same    a refusal (one line), or exactly what the reader makes of `reference` (the file before the change)
    refuse  a refusal: anything read from it is wrong
    note    a refusal, or a reading that says so in a note matching `note` (and passes the invariant oracle)
tests/campaign.py runs the reader's steps as for every input, then judges an exit-0 reading by its `Expect`:
a reading that differs from the truth is a silent-wrong result.

`SEMANTIC[reader](rng, tmp) -> (path, Expect)`; the same (reader, seed) always builds the same input.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import math
import random
import re
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.mutations import DATA, H100, ROOT, SHARED, _bytes, _existing, ncu_csvs


@dataclass(frozen=True)
class Expect:
    kind: str  # same | refuse | note
    why: str  # the mutation, for the findings list
    reference: Path | None = None  # for `same`: the file before the change
    note: str = ""  # for `note`: a regex one of the reading's notes must match


Maker = Callable[[random.Random, Path], tuple[Path, Expect]]


def _pick(rng: random.Random, options: list[tuple[str, Callable[..., tuple[Path, Expect]]]]) -> Callable[..., Any]:
    return rng.choice(options)[1]


# --- ncu CSV --------------------------------------------------------------------------------------------------

_NUMBER = re.compile(r"-?[\d,]*\.?\d+(?:[eE][+-]?\d+)?")


def _read_csv(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(_bytes(path).decode("utf-8"))))


def _write_csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return path


def _numeric_cells(rows: list[list[str]]) -> list[tuple[int, int]]:
    header = rows[0]
    ids = {"ID", "Process ID", "Stream", "Context", "Device", "CC"}
    return [
        (i, j)
        for i, row in enumerate(rows[2:], 2)
        for j, cell in enumerate(row)
        if j < len(header) and header[j] not in ids and _NUMBER.fullmatch(cell)
    ]


def _german(cell: str) -> str:
    return cell.replace(",", "\0").replace(".", ",").replace("\0", ".")


def ncu_locale_file(rng: random.Random, tmp: Path, rows: list[list[str]]) -> tuple[list[list[str]], Expect]:
    for i, j in _numeric_cells(rows):
        rows[i][j] = _german(rows[i][j])
    return rows, Expect("same", "every number in a German locale (1.234,5)")


def ncu_locale_cell(rng: random.Random, tmp: Path, rows: list[list[str]]) -> tuple[list[list[str]], Expect]:
    decimals = [(i, j) for i, j in _numeric_cells(rows) if "." in rows[i][j]]
    if not decimals:
        return ncu_grouping(rng, tmp, rows)
    i, j = rng.choice(decimals)
    rows[i][j] = _german(rows[i][j])
    return rows, Expect("same", f"one number with a decimal comma ({rows[i][j]})")


def ncu_grouping(rng: random.Random, tmp: Path, rows: list[list[str]]) -> tuple[list[list[str]], Expect]:
    drop = rng.random() < 0.5
    for i, j in _numeric_cells(rows):
        cell = rows[i][j]
        if drop:
            rows[i][j] = cell.replace(",", "")
        elif re.fullmatch(r"\d{4,}", cell):
            rows[i][j] = f"{int(cell):,}"
    return rows, Expect("same", "thousands separators " + ("dropped" if drop else "added"))


def ncu_duplicate(rng: random.Random, tmp: Path, rows: list[list[str]]) -> tuple[list[list[str]], Expect]:
    i = rng.randrange(2, len(rows))
    rows.insert(rng.randrange(i + 1, len(rows) + 1), list(rows[i]))
    return rows, Expect("same", f"launch {rows[i][0]} copied (a duplicated launch ID)")


_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_TIME = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def _rescaled_unit(unit: str, rng: random.Random) -> tuple[str, float] | None:
    """Another spelling of the same quantity and the factor from the old unit to the new one."""
    if unit in _TIME:
        new = rng.choice([u for u in _TIME if u != unit])
        return new, _TIME[unit] / _TIME[new]
    m = re.fullmatch(r"([KMGT]?)byte(/s|/second)?", unit)
    if m:
        new_prefix = rng.choice([p for p in _PREFIX if p != m.group(1)])
        return f"{new_prefix}byte{m.group(2) or ''}", _PREFIX[m.group(1)] / _PREFIX[new_prefix]
    return None


def ncu_units(rng: random.Random, tmp: Path, rows: list[list[str]]) -> tuple[list[list[str]], Expect]:
    cols = [j for j, u in enumerate(rows[1]) if _rescaled_unit(u, random.Random(0))]
    if not cols:
        return ncu_shuffle(rng, tmp, rows)
    j = rng.choice(cols)
    new, factor = _rescaled_unit(rows[1][j], rng) or (rows[1][j], 1.0)
    rows[1][j] = new
    for row in rows[2:]:
        with contextlib.suppress(ValueError, IndexError):
            row[j] = repr(float(row[j].replace(",", "")) * factor)
    return rows, Expect("same", f"column {rows[0][j]} rewritten in {new}")


def ncu_shuffle(rng: random.Random, tmp: Path, rows: list[list[str]]) -> tuple[list[list[str]], Expect]:
    if rng.random() < 0.5:
        body = rows[2:]
        rng.shuffle(body)
        return rows[:2] + body, Expect("same", "launch rows reordered")
    order = list(range(len(rows[0])))
    rng.shuffle(order)
    return [[r[j] if j < len(r) else "" for j in order] for r in rows], Expect("same", "columns reordered")


def ncu_fast(rng: random.Random, tmp: Path, rows: list[list[str]]) -> tuple[list[list[str]], Expect]:
    cols = [j for j, u in enumerate(rows[1]) if u in ("byte/s", "Kbyte/s", "Mbyte/s", "Gbyte/s", "Tbyte/s")]
    if not cols:  # no rate in this export: make one (dram__bytes.sum.per_second)
        rows[0].append("dram__bytes.sum.per_second")
        rows[1].append("byte/s")
        for row in rows[2:]:
            row.append("1000000000")
        cols = [len(rows[0]) - 1]
    j = rng.choice(cols)
    rows[1][j] = "byte/s"
    i = rng.randrange(2, len(rows))
    rows[i][j] = f"{rng.choice([5e14, 3e15, 1e17, 9e18]):.0f}"
    return rows, Expect("refuse", f"{rows[0][j]} at {rows[i][j]} byte/s (faster than any memory)")


def ncu_long_format(rng: random.Random, tmp: Path, rows: list[list[str]]) -> tuple[list[list[str]], Expect]:
    header, units = rows[0], rows[1]
    out = [["ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"]]
    k = header.index("Kernel Name")
    for row in rows[2:]:
        out += [[row[0], row[k], header[j], units[j], row[j]] for j in range(13, min(len(header), 40))]
    return out, Expect("refuse", "ncu's long CSV (a metric per row: --print-metric-instances / --page details)")


NCU_EDITS = [
    ("locale-file", ncu_locale_file),
    ("locale-cell", ncu_locale_cell),
    ("grouping", ncu_grouping),
    ("duplicate", ncu_duplicate),
    ("units", ncu_units),
    ("shuffle", ncu_shuffle),
    ("fast", ncu_fast),
    ("long", ncu_long_format),
]


def make_ncu_csv(rng: random.Random, tmp: Path) -> tuple[Path, Expect]:
    source = rng.choice([p for p in ncu_csvs() if p.name.endswith("_raw.csv")])  # --page raw: what perfgate reads
    rows = _read_csv(source)
    rows, expect = _pick(rng, NCU_EDITS)(rng, tmp, [list(r) for r in rows])
    reference = _write_csv(tmp / "reference.csv", _read_csv(source))
    return _write_csv(tmp / "x.csv", rows), Expect(expect.kind, expect.why, reference, expect.note)


# --- nsys exports --------------------------------------------------------------------------------------------

ACTIVITY = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMSET", "NVTX_EVENTS")
_MEMCPY = (
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY AS SELECT start, end, deviceId, streamId, correlationId, globalPid, "
    "bytes, 1 + rowid % 2 AS copyKind FROM CUPTI_ACTIVITY_KIND_MEMSET"
)


def _tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def nsys_duplicate(rng: random.Random, con: sqlite3.Connection) -> Expect:
    n = rng.choice([1, 3, 50])
    con.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT {n}")
    return Expect("same", f"{n} kernel rows copied (a copied table)")


def nsys_shift(rng: random.Random, con: sqlite3.Connection) -> Expect:
    """Every table by the same amount: later, or back to the capture's first activity at 0."""
    low = min(con.execute(f"SELECT coalesce(min(start), 0) FROM {t}").fetchone()[0] for t in ACTIVITY)
    delta = rng.choice([1, 10**9, 10**15, -low])
    for table in ACTIVITY:
        con.execute(f"UPDATE {table} SET start = start + ?, end = end + ?", (delta, delta))
    return Expect("same", f"every timestamp shifted by {delta}")


def nsys_renumber(rng: random.Random, con: sqlite3.Connection) -> Expect:
    ids = [r[0] for r in con.execute("SELECT id FROM StringIds")]
    new = list(ids)
    rng.shuffle(new)
    offset = 10**6
    con.execute("UPDATE StringIds SET id = id + ?", (offset,))
    for old, nid in zip(ids, new):
        con.execute("UPDATE StringIds SET id = ? WHERE id = ?", (nid, old + offset))
    mapping = json.dumps({str(o): n for o, n in zip(ids, new)})
    refs = [
        ("CUPTI_ACTIVITY_KIND_KERNEL", "demangledName"),
        ("CUPTI_ACTIVITY_KIND_KERNEL", "shortName"),
        ("CUPTI_ACTIVITY_KIND_KERNEL", "mangledName"),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId"),
        ("NVTX_EVENTS", "textId"),
    ]
    for table, column in refs:
        with contextlib.suppress(sqlite3.OperationalError):
            con.execute(f"UPDATE {table} SET {column} = json_extract(?, '$.\"' || {column} || '\"') "
                        f"WHERE {column} IS NOT NULL", (mapping,))  # fmt: skip
    return Expect("same", "string ids renumbered consistently")


def nsys_reorder(rng: random.Random, con: sqlite3.Connection) -> Expect:
    table = rng.choice(ACTIVITY)
    con.execute(f"CREATE TABLE shuffled AS SELECT * FROM {table} ORDER BY random()")
    con.execute(f"DROP TABLE {table}")
    con.execute(f"ALTER TABLE shuffled RENAME TO {table}")
    return Expect("same", f"{table} rows stored in another order")


def nsys_fast(rng: random.Random, con: sqlite3.Connection) -> Expect:
    rate = rng.choice([2e5, 1e7, 1.1e12])  # bytes per ns: 200 TB/s .. 1.1e12 GB/s
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = CAST(? * max(end - start, 1) AS INTEGER) "
                "WHERE rowid % 3 = 0", (rate,))  # fmt: skip
    return Expect("note", f"copies at {rate:g} bytes/ns", note=r"faster than 100 TB/s")


def nsys_enum(rng: random.Random, con: sqlite3.Connection) -> Expect:
    con.execute("DROP TABLE IF EXISTS ENUM_CUDA_MEMCPY_OPER")
    return Expect("same", "the copy-kind enum table dropped")


NSYS_EDITS = [
    ("duplicate", nsys_duplicate),
    ("shift", nsys_shift),
    ("renumber", nsys_renumber),
    ("reorder", nsys_reorder),
    ("fast", nsys_fast),
    ("enum", nsys_enum),
]


def make_nsys(rng: random.Random, tmp: Path) -> tuple[Path, Expect]:
    path, reference = tmp / "x.sqlite", tmp / "reference.sqlite"
    shutil.copy(H100 / "perfgate-nsys.sqlite", path)
    edit = _pick(rng, NSYS_EDITS)
    con = sqlite3.connect(path)
    try:
        if edit in (nsys_fast, nsys_enum):  # the recorded run made no copies: some, in the reference too
            con.execute(_MEMCPY)
            con.commit()
            shutil.copy(path, reference)
        else:
            shutil.copy(H100 / "perfgate-nsys.sqlite", reference)
        expect = edit(rng, con)
        con.commit()
    finally:
        con.close()
    return path, Expect(expect.kind, expect.why, reference, expect.note)


# --- torch traces --------------------------------------------------------------------------------------------

OLD_NAMES = {"kernel": "Kernel", "cuda_runtime": "Runtime", "gpu_memcpy": "Memcpy", "gpu_memset": "Memset"}


def _events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = doc["traceEvents"]
    return events


def torch_old_names(rng: random.Random, doc: dict[str, Any]) -> Expect:
    for e in _events(doc):
        name = OLD_NAMES.get(e.get("cat", ""))
        if name:
            e["cat"] = rng.choice([name, name.upper(), name.lower()])
    return Expect("same", "Kineto's old category names (Kernel, Runtime, Memcpy, Memset)")


def torch_begin_end(rng: random.Random, doc: dict[str, Any]) -> Expect:
    out = []
    for e in _events(doc):
        if e.get("ph") == "X" and isinstance(e.get("dur"), (int, float)) and rng.random() < 0.7:
            begin = {k: v for k, v in e.items() if k != "dur"}
            begin["ph"] = "B"
            out += [begin, {"ph": "E", "pid": e.get("pid"), "tid": e.get("tid"), "ts": e["ts"] + e["dur"]}]
        else:
            out.append(e)
    doc["traceEvents"] = out
    return Expect("same", "complete events written as Chrome begin/end pairs")


def torch_shuffle(rng: random.Random, doc: dict[str, Any]) -> Expect:
    rng.shuffle(_events(doc))
    return Expect("same", "events in another order")


def torch_duplicate(rng: random.Random, doc: dict[str, Any]) -> Expect:
    kernels = [e for e in _events(doc) if e.get("cat") == "kernel"]
    for e in rng.sample(kernels, min(len(kernels), rng.choice([1, 2, 5]))):
        _events(doc).append(dict(e))
    return Expect("same", "kernel events copied (a duplicated correlation id)")


def torch_fast(rng: random.Random, doc: dict[str, Any]) -> Expect:
    rate = rng.choice([2e5, 1e8, 1.1e12])  # bytes per ns
    _events(doc).append(
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
         "ts": 1.0, "dur": 0.002, "args": {"bytes": int(rate * 2)}}
    )  # fmt: skip
    return Expect("note", f"a copy at {rate:g} bytes/ns", note=r"faster than 100 TB/s")


def torch_header_last(rng: random.Random, doc: dict[str, Any]) -> Expect:
    events = doc.pop("traceEvents")
    rest = dict(doc)
    doc.clear()
    doc["traceEvents"] = events
    doc.update(rest)
    return Expect("same", "the header after the events")


TORCH_EDITS = [
    ("old-names", torch_old_names),
    ("begin-end", torch_begin_end),
    ("shuffle", torch_shuffle),
    ("duplicate", torch_duplicate),
    ("fast", torch_fast),
    ("header-last", torch_header_last),
]


def make_torch(rng: random.Random, tmp: Path) -> tuple[Path, Expect]:
    source = rng.choice(_existing(DATA / "torch_trace.json", SHARED / "torch_trace.json"))
    doc = json.loads(_bytes(source))
    edit = _pick(rng, TORCH_EDITS)
    reference = tmp / "reference.json"
    if edit is torch_fast:  # the reference holds the same trace without the impossible copy
        reference.write_bytes(_bytes(source))
    expect = edit(rng, doc)
    if edit is not torch_fast:
        reference.write_bytes(_bytes(source))
    text = json.dumps(doc).encode()
    path = tmp / ("x.json.gz" if rng.random() < 0.3 else "x.json")
    path.write_bytes(gzip.compress(text, mtime=0) if path.suffix == ".gz" else text)
    return path, Expect(expect.kind, expect.why, reference, expect.note)


# --- pytest-benchmark JSON -----------------------------------------------------------------------------------

_STATS = ("min", "max", "mean", "stddev", "median", "q1", "q3")


def bench_nudged(rng: random.Random, doc: dict[str, Any]) -> Expect:
    b = rng.choice(doc["benchmarks"])
    key = rng.choice(_STATS)
    b["stats"][key] *= 1 + rng.choice([1e-3, 1e-2, 0.1]) * rng.choice([1, -1])
    return Expect("refuse", f"stats.{key} changed, stats.data kept (statistics that contradict their data)")


def bench_nudged_no_data(rng: random.Random, doc: dict[str, Any]) -> Expect:
    for b in doc["benchmarks"]:
        b["stats"].pop("data", None)
    b = rng.choice(doc["benchmarks"])
    key = rng.choice(["ops", "total", "iqr"])
    b["stats"][key] *= rng.choice([0.5, 2.0, 10.0])
    return Expect("refuse", f"stats.{key} that contradicts the other statistics (no data kept)")


def bench_duplicate(rng: random.Random, doc: dict[str, Any]) -> Expect:
    doc["benchmarks"].append(json.loads(json.dumps(rng.choice(doc["benchmarks"]))))
    return Expect("refuse", "a benchmark listed twice (a duplicated fullname)")


def bench_no_data(rng: random.Random, doc: dict[str, Any]) -> Expect:
    for b in doc["benchmarks"]:
        b["stats"].pop("data", None)
    return Expect("same", "saved without --benchmark-save-data (no data)", note="no-samples")


def bench_reordered(rng: random.Random, doc: dict[str, Any]) -> Expect:
    rng.shuffle(doc["benchmarks"])
    for b in doc["benchmarks"]:
        items = list(b["stats"].items())
        rng.shuffle(items)
        b["stats"] = dict(items)
    return Expect("same", "benchmarks and statistics in another order")


def bench_datetime(rng: random.Random, doc: dict[str, Any]) -> Expect:
    when = doc["datetime"]
    doc["datetime"] = rng.choice([when.replace("T", " "), when + "+00:00" if "+" not in when else when])
    return Expect("same", f"datetime written as {doc['datetime']!r}")


def bench_hyperfine(rng: random.Random, doc: dict[str, Any]) -> Expect:
    doc.clear()
    doc["results"] = [
        {"command": "python x.py", "mean": 0.01, "stddev": 0.001, "median": 0.01, "min": 0.009, "max": 0.013,
         "times": [0.01, 0.011, 0.009]}
    ]  # fmt: skip
    return Expect("refuse", "hyperfine's JSON (another producer's schema)")


BENCH_EDITS = [
    ("nudged", bench_nudged),
    ("nudged-no-data", bench_nudged_no_data),
    ("duplicate", bench_duplicate),
    ("no-data", bench_no_data),
    ("reordered", bench_reordered),
    ("datetime", bench_datetime),
    ("hyperfine", bench_hyperfine),
]


def make_benchmark(rng: random.Random, tmp: Path) -> tuple[Path, Expect]:
    source = DATA / "pytest_benchmark.json"
    doc = json.loads(_bytes(source))
    expect = _pick(rng, BENCH_EDITS)(rng, doc)
    path, reference = tmp / "bench.json", tmp / "reference.json"
    path.write_text(json.dumps(doc))
    reference.write_bytes(_bytes(source))
    return path, Expect(expect.kind, expect.why, reference, expect.note)


# --- perfgate's own files: child output, results, baselines ---------------------------------------------------


def child_median_nudged(rng: random.Random, doc: dict[str, Any]) -> Expect:
    r = rng.choice(doc["results"])
    t = r["timing"]
    t["median_ms"] = rng.uniform(t["q1_ms"], t["q3_ms"]) if rng.random() < 0.5 else t["median_ms"] * 1.05
    t["median_ms"] = min(max(t["median_ms"], t["q1_ms"]), t["q3_ms"])
    if math.isclose(t["median_ms"], sorted(r["samples_ms"])[len(r["samples_ms"]) // 2], rel_tol=1e-9):
        t["median_ms"] = t["q3_ms"]
    return Expect("refuse", "a median its own samples do not give")


def child_duplicate(rng: random.Random, doc: dict[str, Any]) -> Expect:
    doc["results"].append(json.loads(json.dumps(rng.choice(doc["results"]))))
    return Expect("refuse", "a case measured twice (a duplicated case id)")


def child_reordered(rng: random.Random, doc: dict[str, Any]) -> Expect:
    rng.shuffle(doc["results"])
    return Expect("same", "results in another order")


CHILD_EDITS = [("median", child_median_nudged), ("duplicate", child_duplicate), ("reordered", child_reordered)]


def make_child(rng: random.Random, tmp: Path) -> tuple[Path, Expect]:
    source = DATA / "child_results.json"
    doc = json.loads(_bytes(source))
    expect = _pick(rng, CHILD_EDITS)(rng, doc)
    path, reference = tmp / "child.json", tmp / "reference.json"
    path.write_text(json.dumps(doc))
    reference.write_bytes(_bytes(source))
    return path, Expect(expect.kind, expect.why, reference)


def results_other_producer(rng: random.Random, doc: dict[str, Any]) -> dict[str, Any]:
    return json.loads(_bytes(DATA / "pytest_benchmark.json"))


def make_results(rng: random.Random, tmp: Path) -> tuple[Path, Expect]:
    source = rng.choice(sorted(H100.glob("gate_profiled_*_run.json.gz")))
    doc = json.loads(_bytes(source))
    roll = rng.random()
    if roll < 0.3:
        doc = results_other_producer(rng, doc)
        expect = Expect("refuse", "a pytest-benchmark file given as perfgate results")
    elif roll < 0.6:
        rng.shuffle(doc["comparisons"])
        rng.shuffle(doc["cases"])
        expect = Expect("same", "comparisons and cases in another order")
    else:
        doc["cases"].append(json.loads(json.dumps(rng.choice(doc["cases"]))))
        expect = Expect("same", "a case listed twice")
    path, reference = tmp / "results.json", tmp / "reference.json"
    path.write_text(json.dumps(doc))
    reference.write_bytes(_bytes(source))
    return path, Expect(expect.kind, expect.why, reference)


def make_baseline(rng: random.Random, tmp: Path) -> tuple[Path, Expect]:
    source = rng.choice(_existing(ROOT / "baselines" / "nvidia-h100-80gb-hbm3.json", H100 / "profiled_baseline.json"))
    text = _bytes(source).decode()
    doc = json.loads(text)
    roll = rng.random()
    if roll < 0.4:
        items = list(doc["cases"].items())
        rng.shuffle(items)
        doc["cases"] = dict(items)
        out, expect = json.dumps(doc, indent=rng.choice([None, 1, 4])), Expect("same", "cases in another order")
    elif roll < 0.7:
        case = rng.choice(list(doc["cases"]))
        doc["cases"][case]["median_ms"] = f"{doc['cases'][case]['median_ms']}".replace(".", ",")
        out, expect = json.dumps(doc), Expect("refuse", "a median written as text with a decimal comma")
    else:  # a case key written twice: JSON objects with duplicate keys keep the last in json.loads
        case = rng.choice(list(doc["cases"]))
        body = json.dumps(doc["cases"][case])
        out = text.replace('"cases": {', '"cases": {' + json.dumps(case) + ": " + body + ", ", 1)
        expect = Expect("refuse", "a case written twice (a duplicated key)")
    path, reference = tmp / "baseline.json", tmp / "reference.json"
    path.write_text(out)
    reference.write_bytes(_bytes(source))
    return path, Expect(expect.kind, expect.why, reference)


SEMANTIC: dict[str, Maker] = {
    "nsys-sqlite": make_nsys,
    "ncu-csv": make_ncu_csv,
    "torch-json": make_torch,
    "pytest-benchmark": make_benchmark,
    "results-json": make_results,
    "child-output": make_child,
    "baseline": make_baseline,
}
