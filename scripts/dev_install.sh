#!/usr/bin/env bash
# The contributor install: a virtualenv with torch's CPU build and perfgate editable with the dev extra
# (triton for its interpreter, the linters, the browser-test driver, pytest-xdist...). .ci/run and
# scripts/test.sh use it, so CI and a contributor's machine install the same way.
#   bash scripts/dev_install.sh [VENV]      (default: .venv in the checkout)
# torch's CPU build is named by its local version label (PyPI's torch is the CUDA build, with several GB of
# nvidia-* wheels): a wheel this machine keeps locally (pip's find-links) where there is one, else PyTorch's
# CPU index; then its dependencies from the default index (torch itself is already satisfied). Exit 1 if an
# nvidia-* wheel was installed all the same.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.venv}
torch_cpu="torch==2.13.0+cpu"
"${PYTHON:-python3}" -m venv "$venv"
py=$venv/bin/python
"$py" -m pip install -q --upgrade pip
"$py" -m pip install -q --no-index --no-deps "$torch_cpu" 2> /dev/null ||
  "$py" -m pip install -q --no-deps "$torch_cpu" --index-url https://download.pytorch.org/whl/cpu
"$py" -m pip install -q "$torch_cpu"
"$py" -m pip install -q -e ".[dev]"
if "$py" -m pip list 2> /dev/null | grep -i '^nvidia-'; then
  echo "dev_install: CUDA wheels were installed (above); the CPU build needs none"
  exit 1
fi
