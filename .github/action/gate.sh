#!/usr/bin/env bash
# perfgate action, step 2: the gate itself. Its exit status is kept as a step output so the annotation,
# artifact and comment steps still run; the action's last step exits with it.
set -uo pipefail
: "${RESULTS:?}" "${GITHUB_OUTPUT:?not running in GitHub Actions}"
read -r -a args <<< "${PYTEST_ARGS:-.}"
flags=(--perfgate --perfgate-json "$RESULTS/perfgate.json" --perfgate-summary "$RESULTS/perfgate-summary.md"
       --perfgate-report-dir "$RESULTS/charts")
[ "${STRICT:-true}" = "true" ] && flags+=(--perfgate-strict)
[ -n "${PROFILE:-}" ] && flags+=(--perfgate-profile "$PROFILE")
[ -n "${SITE_URL:-}" ] && flags+=(--perfgate-site-url "$SITE_URL")
[ -z "${PERFGATE_DB:-}" ] && flags+=(--perfgate-no-store)
"${PYTHON:-python3}" -m pytest "${args[@]}" "${flags[@]}"
code=$?
echo "exit-code=$code" >> "$GITHUB_OUTPUT"
echo "perfgate: pytest exited with $code"
