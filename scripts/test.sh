#!/usr/bin/env bash
# The test suite in one command on a fresh machine (Python 3.10+, no GPU):
#   bash scripts/test.sh [PYTEST_ARGS...]
# installs the contributor virtualenv (.venv, scripts/dev_install.sh) when it is not there yet, then runs
# the default suite on two workers, Triton kernels through its interpreter. `-m slow` runs the heavy
# end-to-end tests; bash .ci/run is all of CI (linters, browser tests, slow tests).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/perfgate ] || bash scripts/dev_install.sh .venv
export TRITON_INTERPRET=1
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 "$@"
