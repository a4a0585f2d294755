"""`perfgate bisect` on a real git history of this repository's kernels, on the GPU.

    python lab/gpu/ab_bisect.py [--commits 8] [--slow-at 5]

A throwaway repository holds the kernel suite: GOOD, then N commits that each touch the kernels
(a comment in kernels/elementwise.py), one of which (--slow-at) makes the Triton softmax pick a bad
configuration (kernels/_common.py: KERNELS_DETUNE defaults to "softmax", ~2x slower on the H100).
Then, as a user would:

    perfgate bisect GOOD BAD -k test_softmax -- kernels/tests/test_perf.py

Prints every step (commit, good/bad/skip, the case, its ratio and interval) and:
    ab-bisect: expected <sha> (commit K of N), found <sha>: OK|MISMATCH in S step(s), W s
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ab_lab import ROOT, SCRATCH_ROOT, check_tools, commit, env_with, head, log, new_project, timed, write_summary

SCRATCH = SCRATCH_ROOT / "bisect"
DETUNE_FROM = 'os.environ.get("KERNELS_DETUNE", "")'
DETUNE_TO = 'os.environ.get("KERNELS_DETUNE", "softmax")'


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commits", type=int, default=8)
    p.add_argument("--slow-at", type=int, default=5)
    args = p.parse_args()
    check_tools()
    repo = new_project(SCRATCH / "repo")
    good = head(repo)
    common = (ROOT / "kernels" / "_common.py").read_text()
    if DETUNE_FROM not in common:
        raise SystemExit(f"ab-bisect: kernels/_common.py no longer reads {DETUNE_FROM}: update this script")
    elementwise = (repo / "kernels" / "elementwise.py").read_text()
    expected = ""
    for i in range(1, args.commits + 1):
        elementwise += f"\n# lab change {i}\n"
        files = {"kernels/elementwise.py": elementwise}
        message = f"kernels: change {i}"
        if i == args.slow_at:
            files["kernels/_common.py"] = common.replace(DETUNE_FROM, DETUNE_TO)
            message = f"kernels: change {i} (softmax picks a bad configuration)"
        commit(repo, message, files)
        if i == args.slow_at:
            expected = head(repo)
    bad = head(repo)
    env = env_with(TRITON_CACHE_DIR=str(SCRATCH / "triton-head"), PERFGATE_KERNEL_CACHE=str(SCRATCH / "kernels"))
    argv = [
        sys.executable,
        "-m",
        "perfgate",
        "bisect",
        good,
        bad,
        "-k",
        "test_softmax",
        "--worktree-dir",
        str(SCRATCH / "worktrees"),
        "--",
        "-p",
        "no:randomly",
        "kernels/tests/test_perf.py",
    ]
    started = time.monotonic()
    code, _, text = timed("ab_bisect", argv, repo, env, 580)
    steps = [line for line in text.splitlines() if line.startswith("step ")]
    for line in steps:
        print(f"ab-bisect: {line}")
    found_line = next((line for line in text.splitlines() if line.startswith("perfgate bisect:")), "(no result line)")
    print(f"ab-bisect: {found_line}")
    ok = bool(expected) and f"first bad commit {expected}" in found_line
    verdict = "OK" if ok else "MISMATCH"
    result = (
        f"expected {expected[:12]} (commit {args.slow_at} of {args.commits}), {verdict} in {len(steps)} "
        f"step(s), {time.monotonic() - started:.0f} s (exit {code})"
    )
    log(f"ab-bisect: {result}")
    write_summary([*steps, found_line, result])


if __name__ == "__main__":
    main()
