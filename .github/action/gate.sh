#!/usr/bin/env bash
# perfgate action, step 2: the gate itself. Its exit status is kept as a step output so the annotation,
# artifact and comment steps still run; the action's last step exits with it.
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
[ -z "${PERFGATE_DB:-}" ] && flags+=(--perfgate-no-store)
"${PYTHON:-python3}" -m pytest "${args[@]}" "${flags[@]}"
code=$?
echo "exit-code=$code" >> "$GITHUB_OUTPUT"
echo "perfgate: pytest exited with $code"
