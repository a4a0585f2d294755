#!/usr/bin/env bash
# perfgate action, step 2: the gate itself. Its exit status is kept as a step output so the annotation,
# artifact and comment steps still run; the action's last step exits with it.
#
# The status is the gate's, not only pytest's: a run that wrote no results file never decided (a test that
# ended the process with status 0, a plugin switched off), and a results file that says the gate failed
# fails the job even when something reset pytest's exit status to 0 (docs/robustness.md).
set -uo pipefail
: "${RESULTS:?}" "${GITHUB_OUTPUT:?not running in GitHub Actions}"
read -r -a args <<< "${PYTEST_ARGS:-.}"
flags=(--perfgate --perfgate-json "$RESULTS/perfgate.json" --perfgate-summary "$RESULTS/perfgate-summary.md")
if [ -n "${BASE:-}" ] && [ "$BASE" != "none" ]; then
  # A/B mode: the head against BASE side by side (docs/ab.md). A shallow checkout may lack the base commit.
  case "$BASE" in -*|*[[:space:]]*) echo "::error title=perfgate::base must be a git ref, got '$BASE'"; exit 2 ;; esac
  if ! git rev-parse --quiet --verify "$BASE^{commit}" > /dev/null; then
    git fetch --quiet --no-tags --depth=1 origin "$BASE" || echo "perfgate: could not fetch $BASE"
  fi
  flags+=(--perfgate-base "$BASE")
  # base worktrees (and their A/A) beside the action's build caches: per PR when the cache is per PR
  [ -n "${TRITON_CACHE_DIR:-}" ] && flags+=(--perfgate-worktree-dir "$(dirname "$TRITON_CACHE_DIR")/worktrees")
else
  flags+=(--perfgate-report-dir "$RESULTS/charts")
fi
[ "${STRICT:-true}" = "true" ] && flags+=(--perfgate-strict)
[ -n "${PROFILE:-}" ] && flags+=(--perfgate-profile "$PROFILE")
[ -n "${SITE_URL:-}" ] && flags+=(--perfgate-site-url "$SITE_URL")
[ -n "${BASELINE_REF:-}" ] && flags+=("--perfgate-baseline-ref=$BASELINE_REF")
[ "${ACCEPT_BASELINE_CHANGE:-false}" = "true" ] && flags+=(--perfgate-accept-baseline-change)
[ -z "${PERFGATE_DB:-}" ] && flags+=(--perfgate-no-store)
rm -f "$RESULTS/perfgate.json"
# a results file from a run that started before this one (planted by the tests, with perfgate blocked) is
# not this run's gate; seconds: the file's started_at is written to the second
started=$(date -u +%Y-%m-%dT%H:%M:%S+00:00)
verdict_args=(--not-before "$started")
[ "${STRICT:-true}" = "true" ] && verdict_args+=(--require-strict)
# the tests run away from the runner's command files (perfgate/ci/confine.py): no variable points at them,
# RUNNER_TEMP is a private directory, and what the tests (or a process they leave behind, killed when they end)
# change there is put back and fails the job: nothing they plant (BASH_ENV, a PATH entry, an output) reaches a
# later step. perfgate runs it isolated (-I) and was imported before the tests ran.
"${PYTHON:-python3}" -I -m perfgate ci confine -- "${PYTHON:-python3}" -m pytest "${args[@]}" "${flags[@]}"
code=$?
echo "perfgate: pytest exited with $code"
if [ ! -f "$RESULTS/perfgate.json" ]; then
  echo "::error title=perfgate::pytest exited with $code but wrote no $RESULTS/perfgate.json: the gate never decided"
  [ "$code" = 0 ] && code=3
else
  "${PYTHON:-python3}" -I -m perfgate ci verdict "${verdict_args[@]}" "$RESULTS/perfgate.json"
  verdict=$?
  if [ "$verdict" = 1 ] && [ "$code" = 0 ]; then
    echo "::error title=perfgate::pytest exited with 0 but the results file says the gate did not pass"
    code=1
  elif [ "$verdict" != 0 ] && [ "$verdict" != 1 ]; then
    echo "::error title=perfgate::pytest exited with $code but $RESULTS/perfgate.json is not this run's gate (see above)"
    [ "$code" = 0 ] && code=3
  fi
fi
echo "exit-code=$code" >> "$GITHUB_OUTPUT"
