#!/usr/bin/env bash
# perfgate report action: one call of `perfgate ci report` (or `ci unlabel`), built from the inputs. No pull
# request code runs in this job; the results are data, checked by perfgate/ci/results.py.
set -uo pipefail
if [ "${UNLABEL_ONLY:-false}" = "true" ]; then
  [ -n "${PR:-}" ] || { echo "perfgate: no pull request: no label to take off"; exit 0; }
  exec "$PERFGATE" ci unlabel --repo "$GITHUB_REPOSITORY" --pr "$PR" --labels "$REMOVE_LABELS"
fi
read -r -a results <<< "${RESULTS:-results/perfgate.json}"
args=(ci report --results "${results[@]}" --repo "$GITHUB_REPOSITORY" --sha "${SHA:-}" --context "${CONTEXT:-perfgate}"
  --marker "${MARKER:-perfgate}" --target-url "${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY}/actions/runs/${GITHUB_RUN_ID:-0}")
if [ -n "${PR:-}" ]; then
  args+=(--pr "$PR")
elif [ -n "${HEAD_OWNER:-}" ] && [ -n "${HEAD_BRANCH:-}" ]; then
  args+=(--pr-head "$HEAD_OWNER:$HEAD_BRANCH")  # a fork's workflow_run: the pull request is found and checked
fi
[ -n "${REMOVE_LABELS:-}" ] && args+=(--remove-labels "$REMOVE_LABELS")
[ "${COMMENT:-true}" = "true" ] || args+=(--no-comment)
[ "${REQUIRE_STRICT:-true}" = "true" ] && args+=(--require-strict)
"$PERFGATE" "${args[@]}"
