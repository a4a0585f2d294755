"""Issue 31 requirement 3 on the GPU: an anchor A/B run (`perfgate ab --anchor`) on `main`.

    python lab/gpu/anchor_session.py [--calibrate-runs 3] [--host]

A throwaway repository holds this checkout's kernel suite (commit A). As a user would:

    perfgate calibrate --runs 3 --reason ...   at A (the baseline records commit A)
    commit the baseline; an unrelated kernel commit (a comment in kernels/elementwise.py); a commit that makes
    the Triton softmax pick a bad configuration (kernels/_common.py: KERNELS_DETUNE defaults to "softmax",
    ~2x slower on the H100); an unrelated commit (a note file)
    perfgate ab --anchor --measure-same-code --summary --json --db ...   on main

The anchor run measures main against A side by side: each case's ratio is its cumulative change since the
calibration. Expected: every softmax case called regressed, the other cases not called. Then `perfgate history
--kind anchor` lists the stored anchor run. Prints `anchor:` lines; $OUT/anchor_session.md (the summary) and
$OUT/anchor_session.tgz (every log, the JSON, the job summary, the history). One GPU (CUDA_VISIBLE_DEVICES's
first); ~3 min on an H100, cut to stay within 5. `--host` tries the plumbing on a machine without a GPU (host-clock
cases in a small project of its own; its numbers mean nothing on a loaded box).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ab_lab import LOGS, ROOT, SCRATCH_ROOT, archive, check_tools, commit, env_with, head, log, new_project, timed
from ab_lab import write_summary as write_lab_summary

SCRATCH = SCRATCH_ROOT / "anchor"
SESSION_LIMIT_S = 270.0  # the whole session, under the 5 minutes it is allowed (expected ~3 min on an H100)
CALIBRATE_LIMIT_S = 150.0  # 3-4 processes of 4 cases: ~20 s cold, ~10 s warm each (kernels_session's cold gate)
GPU_SELECTION = (
    "kernels/tests/test_perf.py",
    "-k",
    "softmax or vector_add or layer_norm",
)  # no rms_norm: its CUDA build (~66 s cold)
DETUNE_FROM = 'os.environ.get("KERNELS_DETUNE", "")'
DETUNE_TO = 'os.environ.get("KERNELS_DETUNE", "softmax")'
HOST_TESTS = """\
import json

N = 20_000
ROUNDS = 1  # the slow commit makes this 2 for sort


def _sort():
    for _ in range(ROUNDS):
        sorted(range(N, 0, -1))


def test_sort(perfgate):
    perfgate.measure(_sort, ())


def test_json_encode(perfgate):
    data = [{"i": i, "s": str(i)} for i in range(2_000)]
    perfgate.measure(json.dumps, (data,))
"""


def gpu_project() -> tuple[Path, dict[str, str], tuple[str, ...], str]:
    """The kernel suite, the files of the slow commit, the selection, what the slowed cases' ids hold."""
    repo = new_project(SCRATCH / "repo")
    common = (ROOT / "kernels" / "_common.py").read_text()
    if DETUNE_FROM not in common:
        raise SystemExit(f"anchor: kernels/_common.py no longer reads {DETUNE_FROM}: update this script")
    return repo, {"kernels/_common.py": common.replace(DETUNE_FROM, DETUNE_TO)}, GPU_SELECTION, "softmax"


def host_project() -> tuple[Path, dict[str, str], tuple[str, ...], str]:
    """Two host-clock cases; the slow commit doubles `sort`'s work (plumbing only)."""
    pyproject = '[project]\nname = "anchor-lab"\nversion = "0"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    repo = new_project(
        SCRATCH / "repo",
        {"pyproject.toml": pyproject, "tests/test_perf.py": HOST_TESTS, "kernels/elementwise.py": "# stand-in\n"},
        files=(),
    )
    slow = HOST_TESTS.replace("ROUNDS = 1", "ROUNDS = 2")
    return repo, {"tests/test_perf.py": slow}, ("tests/test_perf.py",), "test_sort"


def perfgate(*args: str) -> list[str]:
    return [sys.executable, "-m", "perfgate", *args]


def make_history(
    repo: Path, slow_files: dict[str, str], selection: tuple[str, ...], runs: int, env: dict[str, str]
) -> str:
    """Calibrate at A, then the commits after it; commit A's sha."""
    anchor = head(repo)
    argv = perfgate(
        "calibrate",
        "--runs",
        str(runs),
        "--reason",
        "anchor lab: commit A",
        "--no-store",
        "--",
        "-p",
        "no:randomly",
        *selection,
    )
    code, _, text = timed("calibrate", argv, repo, env, CALIBRATE_LIMIT_S)
    if code != 0:
        raise SystemExit(f"anchor: calibrate failed (exit {code}): {text.strip().splitlines()[-1:]}")
    commit(repo, "the baseline, calibrated at A")
    elementwise = repo / "kernels" / "elementwise.py"
    commit(
        repo,
        "kernels: a comment (unrelated)",
        {"kernels/elementwise.py": elementwise.read_text() + "\n# lab: unrelated\n"},
    )
    commit(repo, "the slow commit", slow_files)
    commit(repo, "notes (unrelated)", {"NOTES.md": "an unrelated commit\n"})
    return anchor


def anchor_rows(doc: dict) -> list[tuple[str, str, str, bool]]:
    """Per case its gated comparison: (case, line, verdict, called)."""
    rows = []
    for c in doc.get("comparisons", []):
        if not c.get("gated", True) or c.get("metric") not in ("median_ms", "speedup") or c.get("change_pct") is None:
            continue
        ratio = f"{1 + c['change_pct'] / 100:.3f}"
        if c.get("ci_low_pct") is not None and c.get("ci_high_pct") is not None:
            ratio += f" [{1 + c['ci_low_pct'] / 100:.3f}, {1 + c['ci_high_pct'] / 100:.3f}]"
        detects = "detects -"
        if c.get("detects_pct") is not None:
            detects = f"detects >= {c['detects_pct']:.2f}%"
        elif c.get("threshold_pct") is not None:
            detects = f"detects > {c['threshold_pct']:.2f}%"
        line = (
            f"{c['case_id']} {c['metric']}: base {c.get('baseline')}, head {c.get('current')}, ratio {ratio}, {detects}"
        )
        rows.append((c["case_id"], line, c["verdict"], c["verdict"] in ("regressed", "improved")))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calibrate-runs", type=int, default=3)
    p.add_argument("--host", action="store_true", help="host-clock cases: try the plumbing without a GPU")
    args = p.parse_args()
    started = time.monotonic()
    check_tools(gpu=not args.host)
    repo, slow_files, selection, slowed_name = host_project() if args.host else gpu_project()
    env = env_with(TRITON_CACHE_DIR=str(SCRATCH / "triton"), PERFGATE_KERNEL_CACHE=str(SCRATCH / "kernels"))
    anchor = make_history(repo, slow_files, selection, args.calibrate_runs, env)
    log(f"anchor: calibrated at A = {anchor[:12]}; main = {head(repo)[:12]} (4 commits later, one slows {slowed_name})")
    out_json, summary, db = LOGS / "anchor.json", LOGS / "anchor-summary.md", LOGS / "history.db"
    argv = perfgate(
        "ab", "--anchor", "--measure-same-code", "--json", str(out_json), "--summary", str(summary),
        "--db", str(db), "--worktree-dir", str(SCRATCH / "worktrees"), "--", "-p", "no:randomly", *selection,
    )  # fmt: skip
    # the whole session within SESSION_LIMIT_S: the anchor run gets what the calibration left (interrupted past it)
    limit_s = max(60.0, SESSION_LIMIT_S - (time.monotonic() - started))
    code, wall, text = timed("anchor_ab", argv, repo, env, limit_s)
    said = [
        line
        for line in text.splitlines()
        if line.startswith(("perfgate: anchor", "perfgate: A/B cost", "perfgate: A/B gate"))
    ]
    for line in said:
        log(f"anchor: {line}")
    doc = json.loads(out_json.read_text()) if out_json.is_file() else {}
    rows = anchor_rows(doc)
    for _, line, verdict, _ in rows:
        log(f"anchor: {line} -> {verdict}")
    _, _, listed = timed("history", perfgate("history", "--db", str(db), "--kind", "anchor"), repo, env, 60)
    for line in listed.splitlines():
        log(f"anchor: history --kind anchor: {line}")
    slowed = {case for case, _, _, _ in rows if slowed_name in case}
    called = {case for case, _, _, c in rows if c}
    base = str(doc.get("ab", {}).get("base_commit", ""))
    ok = bool(slowed) and called == slowed and base == anchor
    result = (
        f"anchor: {'OK' if ok else 'MISMATCH'}: base {base[:12]} (A {anchor[:12]}), "
        f"called {sorted(called)}, expected {sorted(slowed)}; anchor run exit {code} in {wall:.0f} s, "
        f"session {time.monotonic() - started:.0f} s"
    )
    log(result)
    if summary.is_file():
        (LOGS / "job-summary.md").write_text(summary.read_text())
    archive()
    write_lab_summary([*said, *(line + f" -> {v}" for _, line, v, _ in rows), result])


if __name__ == "__main__":
    main()
