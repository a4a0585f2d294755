"""Real pytest-benchmark and pytest-codspeed suites, unchanged, under `pytest --perfgate` (issue 29, req 6):
per suite `perfgate calibrate`, then the gate with `--benchmark-json`, then the file read back by
pytest-benchmark's own loader (`FileStorage.load`) and its `pytest-benchmark compare` command.

Suites (nothing of them is committed here; give each project's source tree, e.g. `git archive` of
ijl/orjson 5cbb3d0398a2 `bench data`, ariebovenberg/whenever e2b1627be899 `benchmarks/python pytest.ini`,
python-attrs/attrs c1dc5dcba16e `bench`):
  orjson   (ijl/orjson `bench/` + `data/`: pytest-benchmark, parametrized, group + extra_info)
  whenever (ariebovenberg/whenever `benchmarks/python/`: pytest-benchmark, plain benchmark(fn, ...))
  attrs    (python-attrs/attrs `bench/`: pytest-codspeed, `pytestmark = pytest.mark.benchmark()`, whole tests)
Each runs in the virtualenv given for it: one with pytest-benchmark (and the library under test), one with
pytest-codspeed and no pytest-benchmark; perfgate installed in both (this checkout). The JSON is checked with
the pytest-benchmark virtualenv's Python.

    python scripts/benchmark_compat_suites.py --pb-venv /tmp/bc_lab/venv-pb --cs-venv /tmp/bc_lab/venv-cs \\
        --orjson /tmp/bc_lab/suites/orjson --whenever /tmp/bc_lab/suites/whenever \\
        --attrs /tmp/bc_lab/suites/attrs --runs 3 --out docs/evidence/data/host/benchmark-compat-suites.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from pathlib import Path

TIMEOUT_S = 1800
CHECK = """
import json, sys
from pytest_benchmark.logger import Logger
from pytest_benchmark.storage.file import FileStorage
loaded = list(FileStorage(sys.argv[1], Logger(Logger.QUIET)).load(sys.argv[2]))
print(json.dumps([len(doc["benchmarks"]) for _, doc in loaded]))
"""


def sh(argv: list[str], cwd: Path) -> tuple[int, str, float]:
    t0 = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S)
    took = time.monotonic() - t0
    print(f"  [{took:6.1f} s, exit {done.returncode}] {' '.join(argv[:10])}", flush=True)
    return done.returncode, done.stdout + done.stderr, took


def last(text: str, prefix: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith(prefix)]
    return lines[-1] if lines else ""


def suite(name: str, tree: Path, venv: Path, pb_venv: Path, tests: list[str], runs: int) -> dict[str, object]:
    print(f"{name}: {tree}", flush=True)
    for leftover in ("baselines", ".perfgate", ".benchmarks", "bench.json"):
        path = tree / leftover
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    py = str(venv / "bin" / "python")
    code_c, out_c, took_c = sh(
        [str(venv / "bin" / "perfgate"), "calibrate", "--runs", str(runs), "--reason", "benchcompat", "--", *tests],
        tree,
    )
    gate = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--perfgate", *tests, "--benchmark-json", "bench.json"]
    code_g, out_g, took_g = sh(gate, tree)
    code_l, out_l, _ = sh([str(pb_venv / "bin" / "python"), "-c", CHECK, str(tree), "bench.json"], tree)
    code_p, out_p, _ = sh([str(pb_venv / "bin" / "pytest-benchmark"), "compare", "bench.json"], tree)
    doc = json.loads((tree / "bench.json").read_text()) if (tree / "bench.json").exists() else {"benchmarks": []}
    names = [b["fullname"] for b in doc["benchmarks"]]
    result = {
        "suite": name,
        "tests": tests,
        "calibrate": {"exit": code_c, "seconds": round(took_c, 1), "line": last(out_c, "perfgate: wrote")},
        "gate": {"exit": code_g, "seconds": round(took_g, 1), "line": last(out_g, "perfgate: gate")},
        "benchmark_json": {
            "benchmarks": len(names),
            "loader_exit": code_l,
            "loader_counts": out_l.strip().splitlines()[-1] if out_l.strip() else "",
            "compare_exit": code_p,
            "compare_rows_named": sum(1 for n in names if n.split("::")[-1] in out_p),
            "median_s": sorted(b["stats"]["median"] for b in doc["benchmarks"]),
        },
    }
    print(json.dumps(result, indent=1), flush=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pb-venv", type=Path, required=True)
    ap.add_argument("--cs-venv", type=Path, required=True)
    ap.add_argument("--orjson", type=Path)
    ap.add_argument("--whenever", type=Path)
    ap.add_argument("--attrs", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    results = []
    if a.orjson:
        tests = ["bench/benchmark_dumps.py", "bench/benchmark_loads.py"]
        results.append(suite("orjson", a.orjson, a.pb_venv, a.pb_venv, tests, a.runs))
    if a.whenever:
        results.append(suite("whenever", a.whenever, a.pb_venv, a.pb_venv, ["benchmarks/python"], a.runs))
    if a.attrs:
        # the three class-creation tests and first_access take 0.5-100 s per call on a loaded 2-core machine
        tests = ["bench", "-k", "not first_access and not create_"]
        results.append(suite("attrs (pytest-codspeed)", a.attrs, a.cs_venv, a.pb_venv, tests, a.runs))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
