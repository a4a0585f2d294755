#!/usr/bin/env bash
# perfgate's quick start on any machine with Python 3.10+ and no GPU, in one command:
#   bash examples/cpu-quickstart/run.sh
# It makes a virtualenv with perfgate's user install from this checkout (pytest, numpy, py-cpuinfo2: no
# torch), copies this example project to a scratch directory and runs its gate three times:
#   1. the first run writes the baseline for this CPU                     -> green (2 new)
#   2. the same code again, judged against the baseline and run 1         -> green (2 unchanged)
#   3. QUICKSTART_SLOW=1 computes each distance three times (~2x slower) -> red (1 regressed, exit 1)
# No calibration step: a run's history gives the gate the noise between processes that an uncalibrated
# baseline lacks (`perfgate calibrate` makes the baseline your project would commit).
# Exit 0 when the gate said green, green, red; the scratch project is left for you to look at.
# environment: VENV (default .venv-quickstart in the checkout), PYTHON (default python3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${VENV:-$repo/.venv-quickstart}
if [ ! -x "$venv/bin/perfgate" ]; then
  echo "== a virtualenv with perfgate (user install, no extras) at $venv"
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q "$repo"
fi
project=$(mktemp -d "${TMPDIR:-/tmp}/perfgate-quickstart.XXXXXX")
cp "$here/pyproject.toml" "$here/shapes.py" "$here/test_perf.py" "$project/"
cd "$project"
gate() { "$venv/bin/python" -m pytest -q -p no:cacheprovider --perfgate "$@"; }

echo "== 1. first run: writes the baseline (baselines/host-<your cpu>.json)"
gate
echo "== 2. the same code again: green"
gate
echo "== 3. QUICKSTART_SLOW=1: pairwise_distances computes each distance three times (~2x slower): red"
rc=0
QUICKSTART_SLOW=1 gate || rc=$?
echo
if [ "$rc" = 1 ]; then
  echo "quick start: green, green, red as expected (the project is in $project)"
else
  echo "quick start: the slowed run exited $rc, not 1 (the project is in $project)"
  exit 1
fi
