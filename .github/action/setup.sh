#!/usr/bin/env bash
# perfgate action, step 1: where the history, the caches and the results live (see action.yml's inputs).
# The history and the caches sit outside the checkout (actions/checkout wipes the workspace) under the
# runner's tool cache, one directory per repository; results go to a fresh directory under RUNNER_TEMP.
set -euo pipefail
: "${GITHUB_ENV:?not running in GitHub Actions}" "${GITHUB_OUTPUT:?not running in GitHub Actions}"
base="${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-/tmp}}/perfgate/${GITHUB_REPOSITORY:-local}"
history="${HISTORY:-$base/history.db}"
cache="${CACHE_DIR:-$base/cache}"
results="${RUNNER_TEMP:-/tmp}/perfgate-results-${GITHUB_RUN_ID:-0}-${GITHUB_JOB:-job}"

for value in "$history" "$cache" "${CACHE_SEED:-}"; do
  case "$value" in *$'\n'*) echo "::error title=perfgate::a path input holds a newline"; exit 2 ;; esac
done

rm -rf "$results"
mkdir -p "$results" "$cache/triton" "$cache/kernels"
if [ -n "${CACHE_SEED:-}" ] && [ -d "$CACHE_SEED" ] && [ -z "$(ls -A "$cache/triton")" ] \
   && [ -z "$(ls -A "$cache/kernels")" ]; then
  # a per-PR cache starts as a copy of the trusted one: warm, and nothing written here is read by trusted runs
  cp -a "$CACHE_SEED/." "$cache/"
  echo "perfgate: cache seeded from $CACHE_SEED"
fi
{
  echo "TRITON_CACHE_DIR=$cache/triton"
  echo "PERFGATE_KERNEL_CACHE=$cache/kernels"
  if [ "$history" != "none" ]; then
    mkdir -p "$(dirname "$history")"
    echo "PERFGATE_DB=$history"
  fi
} >> "$GITHUB_ENV"
echo "dir=$results" >> "$GITHUB_OUTPUT"
echo "perfgate: history ${history}, caches ${cache}, results ${results}"
