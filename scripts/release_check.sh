#!/usr/bin/env bash
# The release workflow's build-and-check job (.github/workflows/release.yml), up to the upload:
#   bash scripts/release_check.sh [DIST]      (default: dist/)
# builds the sdist and the wheel in a clean build environment, checks their metadata (twine check
# --strict: the README renders on PyPI) and the wheel's contents (check-wheel-contents: no stray modules,
# no duplicates, every package present), then installs the wheel with its core dependencies into a fresh
# virtualenv and runs it: the console script, the pytest plugin, and no torch/triton/nvidia wheel pulled.
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${1:-dist}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${PYTHON:-python3}" -m venv "$work/tools"
"$work/tools/bin/python" -m pip install -q --upgrade pip
"$work/tools/bin/python" -m pip install -q build twine check-wheel-contents
rm -rf "$dist"
"$work/tools/bin/python" -m build --outdir "$dist" .
"$work/tools/bin/twine" check --strict "$dist"/*
"$work/tools/bin/check-wheel-contents" "$dist"/*.whl
"${PYTHON:-python3}" -m venv "$work/user"
"$work/user/bin/python" -m pip install -q "$dist"/*.whl
"$work/user/bin/perfgate" --help > /dev/null
(cd "$work" && "$work/user/bin/python" -m pytest --help > "$work/pytest-help.txt")
grep -q -- "--perfgate " "$work/pytest-help.txt" || { echo "release_check: the pytest plugin is not registered"; exit 1; }
if "$work/user/bin/python" -m pip list 2> /dev/null | grep -i -E '^(torch|triton|nvidia-)'; then
  echo "release_check: the wheel's core install pulled the packages above"
  exit 1
fi
echo "release_check: $(ls "$dist" | tr '\n' ' ')built, checked, installed and run"
