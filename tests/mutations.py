"""Mutations of real recorded files, for the mutation campaign (tests/campaign.py): every input starts as
a file NVIDIA's tools, torch, pytest-benchmark or perfgate itself wrote (tests/data/, the shared H100
fixtures), and is damaged the way files get damaged or edited: bytes flipped, cut or spliced; SQL run on
an nsys export (start/end swapped, huge values, NULLs, dangling string ids, non-text strings, tables
dropped, added or replaced by views); CSV quirks; JSON tokens swapped for huge integers, overflowing
floats, other types. tests/fuzzing.py keeps the structure-aware hypothesis generators.

`MAKERS[reader](rng, tmp) -> Path` builds one input; the same (reader, seed) always builds the same file.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import gzip
import json
import random
import re
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

DATA = Path(__file__).parent / "data"
H100 = DATA / "h100"
SHARED = Path("/work/shared/fixtures/h100")
ROOT = Path(__file__).resolve().parents[1]


def _existing(*paths: Path) -> list[Path]:
    return [p for p in paths if p.is_file()]


@functools.cache
def _bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


# --- bytes -----------------------------------------------------------------------------------------


def mutate_bytes(data: bytes, rng: random.Random, donor: bytes = b"") -> bytes:
    """Flip bytes, cut the file, or splice in a chunk of itself or of another real file."""
    b = bytearray(data)
    roll = rng.random()
    if roll < 0.25 or not b:
        return bytes(b[: rng.randint(0, len(b))])
    if roll < 0.45:
        source = donor or data
        start = rng.randrange(len(source))
        chunk = source[start : start + rng.randint(1, 4096)]
        at = rng.randrange(len(b))
        if rng.random() < 0.5:
            b[at : at + len(chunk)] = chunk  # overwrite
        else:
            b[at:at] = chunk  # insert
        return bytes(b)
    if roll < 0.55:
        at = rng.randrange(len(b))
        del b[at : at + rng.randint(1, 4096)]
        return bytes(b)
    for _ in range(rng.choice([1, 2, 4, 16, 64])):
        i = rng.randrange(len(b))
        b[i] = b[i] ^ (1 << rng.randrange(8)) if rng.random() < 0.5 else rng.randrange(256)
    return bytes(b)


# --- JSON tokens -----------------------------------------------------------------------------------

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|[{}\[\]:,]')
HUGE_NUMBERS = [
    "1" + "0" * 5000,
    "9" * 400,
    "-" + "9" * 400,
    "1" * 21,
    "1e306",
    "1e400",
    "-1e400",
    "1e308",
    "-1",
    "-1e306",
    "0",
    "-0",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "1e-320",
    "1.5",
    "4e18",
    "9.9e14",
    "1e15",
    "999999999999999",
    "NaN",
    "Infinity",
    "-Infinity",
    "0.0000001",
    "3e38",
]
ODD_TOKENS = [
    '"inf"',
    '"NaN"',
    '""',
    '"x"',
    '"\\u0000"',
    '"\\ud800"',
    '"' + "x" * 200_000 + '"',
    "null",
    "true",
    "[]",
    "{}",
    '{"a": 1}',
    "[" * 5000,
    "[1, 2]",
    '"-1"',
    '"1e400"',
]


def mutate_json_text(text: str, rng: random.Random) -> str:
    """Token-level damage: numbers swapped for huge/overflowing/odd ones, tokens deleted, doubled,
    swapped or replaced by other types, a key/value pair duplicated."""
    tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
    if not tokens:
        return text
    numbers = [t for t in tokens if text[t[0]] in "-0123456789"]
    out = text
    for _ in range(rng.choice([1, 1, 2, 3, 8])):
        roll = rng.random()
        pool = numbers if numbers and roll < 0.55 else tokens
        start, end = rng.choice(pool)
        if start >= len(out) or end > len(out):
            continue
        if roll < 0.55:
            new = rng.choice(HUGE_NUMBERS)
        elif roll < 0.75:
            new = rng.choice(ODD_TOKENS + HUGE_NUMBERS)
        elif roll < 0.85:
            new = ""  # deleted
        elif roll < 0.92:
            new = out[start:end] * 2
        else:
            other = rng.choice(tokens)
            new = out[other[0] : other[1]] if other[1] <= len(out) else ""
        out = out[:start] + new + out[end:]
    return out


def _leaves(doc: object, path: tuple[object, ...] = ()) -> list[tuple[tuple[object, ...], object]]:
    if isinstance(doc, dict):
        return [leaf for k, v in doc.items() for leaf in _leaves(v, (*path, k))]
    if isinstance(doc, list):
        return [leaf for i, v in enumerate(doc) for leaf in _leaves(v, (*path, i))]
    return [(path, doc)]


def _set(doc: object, path: tuple[object, ...], value: object) -> None:
    for key in path[:-1]:
        doc = doc[key]  # type: ignore[index]
    doc[path[-1]] = value  # type: ignore[index]


def mutate_json_values(text: str, rng: random.Random) -> str:
    """Valid JSON with numbers that cannot be true: negative, scaled past physics, swapped with each
    other (a median above its max), huge but finite; the structure stays, so the reader gets past parsing."""
    doc = json.loads(text)
    numbers = [(p, v) for p, v in _leaves(doc) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not numbers:
        return text
    for _ in range(rng.choice([1, 1, 2, 3, 6])):
        path, value = rng.choice(numbers)
        roll = rng.random()
        if roll < 0.2:
            other_path, other = rng.choice(numbers)
            _set(doc, other_path, value)
            new: object = other
        elif roll < 0.4:
            new = -abs(value) - rng.choice([0, 1, 0.5])
        elif roll < 0.6:
            new = value * rng.choice([1e6, 1e12, 1e300, -1])
        else:
            new = rng.choice(
                [
                    0,
                    -0.0,
                    1e306,
                    -1e306,
                    9.9e14,
                    1e15,
                    4e18,
                    2**63 - 1,
                    2**63,
                    2**64,
                    1e-320,
                    3e38,
                    True,
                    None,
                    "1.0",
                    [],
                    {},
                ]
            )
        _set(doc, path, new)
    return json.dumps(doc)


def _json_input(sources: list[Path], rng: random.Random, tmp: Path, name: str) -> Path:
    data = _bytes(rng.choice(sources))
    roll = rng.random()
    if roll < 0.4:
        content = mutate_json_values(data.decode("utf-8"), rng).encode("utf-8")
    elif roll < 0.8:
        content = mutate_json_text(data.decode("utf-8"), rng).encode("utf-8", errors="surrogatepass")
    else:
        content = mutate_bytes(data, rng, _bytes(rng.choice(sources)))
    path = tmp / name
    if name.endswith(".gz"):
        packed = gzip.compress(content, mtime=0)
        path.write_bytes(packed if rng.random() < 0.6 else mutate_bytes(packed, rng))  # corrupt members too
    else:
        path.write_bytes(content)
    return path


# --- nsys exports (SQL) -----------------------------------------------------------------------------

NSYS_TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "NVTX_EVENTS",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
)
HUGE_INTS = [2**63 - 1, -(2**63), 2**62, 4 * 10**18, 9 * 10**18, -1, -5, 10**15]
ODD_SQL = [None, "text", b"\x00\xff", 1.5, float("inf"), -1.5e300, "", "12abc", 2**63 - 1, -(2**63)]


def _sql_mutations(con: sqlite3.Connection, rng: random.Random) -> None:
    t = rng.choice(NSYS_TABLES)
    where = rng.choice(["", " WHERE rowid % 7 = 0", " WHERE rowid = 1", " WHERE rowid % 2 = 0", " WHERE rowid > 100"])
    big = rng.choice(HUGE_INTS)
    odd = rng.choice(ODD_SQL)
    col = rng.choice(
        [
            "start",
            "end",
            "demangledName",
            "nameId",
            "textId",
            "registersPerThread",
            "bytes",
            "globalTid",
            "correlationId",
            "eventType",
            "globalPid",
            "copyKind",
            "text",
            "gridX",
            "staticSharedMemory",
        ]
    )
    actions: list[tuple[str, tuple[object, ...]]] = [
        (f"UPDATE {t} SET start = end, end = start{where}", ()),
        (f"UPDATE {t} SET end = start + ?{where}", (big,)),
        (f"UPDATE {t} SET start = ?{where}", (big,)),
        (f"UPDATE {t} SET start = ?, end = ?{where}", (big, big)),
        (f"UPDATE {t} SET {col} = ?{where}", (odd,)),
        (f"UPDATE {t} SET {col} = ?{where}", (big,)),
        ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 1000000007" + where, ()),
        ("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 1000000009" + where, ()),
        ("UPDATE NVTX_EVENTS SET textId = 1000000011, text = NULL" + where, ()),
        ("UPDATE StringIds SET value = ?" + where, (odd,)),
        ("UPDATE StringIds SET value = CAST(x'c328ff' AS TEXT)" + where, ()),
        ("UPDATE StringIds SET value = 'same name'", ()),  # every name collides
        ("UPDATE StringIds SET value = value || '_v3020'" + where, ()),
        (f"UPDATE {t} SET end = NULL{where}", ()),
        (f"DELETE FROM {t}{where}", ()),
        (f"INSERT INTO {t} SELECT * FROM {t}{where}", ()),
        (f"DROP TABLE {rng.choice([*NSYS_TABLES, 'StringIds', 'META_DATA_EXPORT', 'TARGET_INFO_GPU'])}", ()),
        ("CREATE TABLE junk (a, b)", ()),
        (f"ALTER TABLE {t} RENAME TO {t}_orig", ()),  # followed by a view below
        (
            "UPDATE META_DATA_EXPORT SET value = ? WHERE name = 'EXPORT_SCHEMA_VERSION'",
            (rng.choice(["3.99.0", "4.0.0", "", None, 3]),),
        ),
        ("UPDATE TARGET_INFO_GPU SET name = ?", (odd,)),
        ("UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET bytes = ?" + where, (rng.choice([-1, 2**63 - 1, "x", 1.5]),)),
        ("UPDATE NVTX_EVENTS SET eventType = ?" + where, (rng.choice([59, 60, 34, -1, None, "59"]),)),
        ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET registersPerThread = ?" + where, (rng.choice([-1, "x", 2**63 - 1]),)),
    ]
    sql, params = rng.choice(actions)
    with contextlib.suppress(sqlite3.DatabaseError):
        kind = con.execute("SELECT type FROM sqlite_master WHERE name = ?", (t,)).fetchone()
        if rng.random() < 0.5 and kind == ("table",):  # the table without its NOT NULL and type constraints
            con.execute(f"CREATE TABLE loose AS SELECT * FROM {t}")
            con.execute(f"DROP TABLE {t}")
            con.execute(f"ALTER TABLE loose RENAME TO {t}")
        con.execute(sql, params)
        if "RENAME TO" in sql:
            endless = rng.random() < 0.3
            body = (
                f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT o.* FROM n, {t}_orig o"
                if endless
                else f"SELECT * FROM {t}_orig"
            )
            con.execute(f"CREATE VIEW {t} AS {body}")


def make_nsys(rng: random.Random, tmp: Path) -> Path:
    path = tmp / "x.sqlite"
    source = H100 / "perfgate-nsys.sqlite"
    if rng.random() < 0.15:
        path.write_bytes(mutate_bytes(_bytes(source), rng))
        return path
    shutil.copy(source, path)
    con = sqlite3.connect(path)
    try:
        if rng.random() < 0.3:  # the recorded run made no copies: a memcpy table from its memsets
            con.execute(
                "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY AS SELECT start, end, deviceId, streamId, "
                "correlationId, globalPid, bytes, abs(random()) % 12 AS copyKind "
                "FROM CUPTI_ACTIVITY_KIND_MEMSET"
            )
            con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY SELECT * FROM CUPTI_ACTIVITY_KIND_MEMCPY")
        for _ in range(rng.choice([1, 1, 2, 3, 5])):
            _sql_mutations(con, rng)
        con.commit()
    finally:
        con.close()
    return path


# --- ncu -----------------------------------------------------------------------------------------------


def ncu_reports() -> list[Path]:
    return _existing(H100 / "perfgate-ncu.ncu-rep.gz", SHARED / "full.ncu-rep", SHARED / "nvtx.ncu-rep")


def make_ncu_rep(rng: random.Random, tmp: Path) -> Path:
    sources = ncu_reports()
    path = tmp / "x.ncu-rep"
    path.write_bytes(mutate_bytes(_bytes(rng.choice(sources)), rng, _bytes(rng.choice(sources))))
    return path


def ncu_csvs() -> list[Path]:
    return _existing(
        H100 / "perfgate-ncu_raw.csv", SHARED / "full_raw.csv", SHARED / "nvtx_raw.csv", SHARED / "full_details.csv"
    )


ODD_CELLS = [
    "inf",
    "-inf",
    "nan",
    "NaN",
    "-1",
    "-5e9",
    "1e400",
    "1e308",
    "9" * 400,
    "",
    "n/a",
    "1,2,3",
    "1.5",
    "99999999999999999999",
    "1e30",
    "abc",
    "-0",
    '"',
    "0x10",
]


def _cells(line: str) -> list[str]:
    return next(iter(csv.reader([line])), [])


def _line(cells: list[str]) -> str:
    return ",".join('"' + c.replace('"', '""') + '"' for c in cells)


def _put(row: list[str], j: int, value: str) -> None:
    row += [""] * (j + 1 - len(row))
    row[j] = value


def mutate_csv_text(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    if len(lines) < 3:
        return text
    header, units, rows = _cells(lines[0]), _cells(lines[1]), [_cells(x) for x in lines[2:]]
    units += [""] * (len(header) - len(units))  # a --page details export has no units row
    rows = [r for r in rows if r] or [[""] * len(header)]
    roll = rng.random()
    if roll < 0.1:
        return "\n".join([lines[0], ""] + lines[1:])  # a blank line after the header
    if roll < 0.15:
        j = rng.randrange(len(header))
        _put(rows[rng.randrange(len(rows))], j, "x" * rng.choice([131_073, 300_000]))  # past csv's field limit
    elif roll < 0.25:
        j = rng.randrange(len(header))
        header, units = header + [header[j]], units + [units[j]]
        rows = [r + [r[j] if j < len(r) else ""] for r in rows]
    elif roll < 0.45:
        for _ in range(rng.choice([1, 2, 5, 20])):
            r = rows[rng.randrange(len(rows))]
            j = 0 if rng.random() < 0.3 else rng.randrange(len(r)) if r else 0
            if r:
                r[j] = rng.choice(ODD_CELLS)
    elif roll < 0.55:
        j = rng.randrange(len(units))
        units[j] = rng.choice(["%", "Tbyte/s", "xyz", "nsecond", "", "us", "byte", "1/0", "%/byte"])
    elif roll < 0.6:
        return "\n".join([lines[0]] + lines[2:])  # no units row
    elif roll < 0.7:
        rows = rows * rng.choice([2, 10, 50])  # many launches
    elif roll < 0.75:
        name = header.index("Kernel Name") if "Kernel Name" in header else 0
        _put(rows[rng.randrange(len(rows))], name, rng.choice(["", " ", "\x00"]))
    elif roll < 0.8:
        r = rows[rng.randrange(len(rows))]
        del r[rng.randrange(len(r)) :]
    else:
        return mutate_bytes(text.encode(), rng).decode("utf-8", errors="replace")
    sep = "\r\n" if rng.random() < 0.1 else "\n"
    return sep.join([_line(header), _line(units)] + [_line(r) for r in rows])


def make_ncu_csv(rng: random.Random, tmp: Path) -> Path:
    path = tmp / "x.csv"
    text = _bytes(rng.choice(ncu_csvs())).decode("utf-8")
    path.write_text(mutate_csv_text(text, rng), encoding="utf-8", errors="surrogatepass")
    return path


# --- JSON files ---------------------------------------------------------------------------------------


def make_torch(rng: random.Random, tmp: Path) -> Path:
    return _json_input(
        _existing(DATA / "torch_trace.json", SHARED / "torch_trace.json"),
        rng,
        tmp,
        rng.choice(["t.json", "t.json", "t.json.gz"]),
    )


def make_benchmark(rng: random.Random, tmp: Path) -> Path:
    return _json_input([DATA / "pytest_benchmark.json"], rng, tmp, "bench.json")


def make_results(rng: random.Random, tmp: Path) -> Path:
    return _json_input(sorted(H100.glob("gate_profiled_*_run.json.gz")), rng, tmp, "results.json")


def make_child(rng: random.Random, tmp: Path) -> Path:
    return _json_input([DATA / "child_results.json"], rng, tmp, "child.json")


def make_baseline(rng: random.Random, tmp: Path) -> Path:
    return _json_input(
        _existing(
            ROOT / "baselines" / "nvidia-h100-80gb-hbm3.json",
            DATA / "baseline_v1_h100.json",
            H100 / "profiled_baseline.json",
        ),
        rng,
        tmp,
        "baseline.json",
    )


MAKERS: dict[str, Callable[[random.Random, Path], Path]] = {
    "nsys-sqlite": make_nsys,
    "ncu-rep": make_ncu_rep,
    "ncu-csv": make_ncu_csv,
    "torch-json": make_torch,
    "pytest-benchmark": make_benchmark,
    "results-json": make_results,
    "child-output": make_child,
    "baseline": make_baseline,
}
