#!/usr/bin/env bash
# perfgate action, step 1: where the history, the caches and the results live (see action.yml's inputs).
# The history and the caches sit outside the checkout (actions/checkout wipes the workspace) under the
# runner's tool cache, one directory per repository; results go to a fresh directory under RUNNER_TEMP.
#
# A pull request's run (pull_request or pull_request_target) runs code nobody trusted yet: it gets its own
# cache (a copy of the trusted one, under RUNNER_TEMP) and no shared history, and may never be pointed at
# the trusted ones; on a self-hosted runner it must be an ephemeral one (docs/github-actions.md).
set -euo pipefail
: "${GITHUB_ENV:?not running in GitHub Actions}" "${GITHUB_OUTPUT:?not running in GitHub Actions}"
base="${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-/tmp}}/perfgate/${GITHUB_REPOSITORY:-local}"
results="${RUNNER_TEMP:-/tmp}/perfgate-results-${GITHUB_RUN_ID:-0}-${GITHUB_JOB:-job}"
case "${GITHUB_EVENT_NAME:-}" in pull_request|pull_request_target) pr=1 ;; *) pr=0 ;; esac

for value in "${HISTORY:-}" "${CACHE_DIR:-}" "${CACHE_SEED:-}" "${DB_URL:-}"; do
  case "$value" in *$'\n'*) echo "::error title=perfgate::a path input holds a newline"; exit 2 ;; esac
done

server=""
if [ -n "${DB_URL:-}" ]; then
  # a fleet's history on a server (a secret): masked in the log from here on, never printed
  echo "::add-mask::$DB_URL"
  case "$DB_URL" in
    postgresql://*|postgres://*|postgresql+psycopg://*) ;;
    *) echo "::error title=perfgate::db-url must be a postgresql:// URL"; exit 2 ;;
  esac
  if [ "$pr" = 1 ]; then
    echo "::notice title=perfgate::db-url is not used by a pull request's run (its code is not trusted yet)"
  else
    server="$DB_URL"
  fi
fi

if [ "$pr" = 1 ]; then
  if [ "${RUNNER_ENVIRONMENT:-}" = "self-hosted" ]; then
    if [ "${EPHEMERAL_RUNNER:-}" != "true" ]; then
      echo "::error title=perfgate::a pull request's code is about to run on a self-hosted runner not declared" \
           "ephemeral: on a persistent runner it can leave code that later trusted runs load. Use ephemeral runners" \
           "(./config.sh --ephemeral) and set the action's ephemeral-runner input to \"true\" (docs/github-actions.md)"
      exit 2
    fi
    marker="${RUNNER_TEMP:-/nonexistent}/../../.runner"  # the runner's settings, in its default layout
    if [ -f "$marker" ] && ! grep -Eq '"[Ee]phemeral"[[:space:]]*:[[:space:]]*true' "$marker"; then
      echo "::error title=perfgate::ephemeral-runner is \"true\" but this runner's .runner file says it is not ephemeral"
      exit 2
    fi
  fi
  history="${HISTORY:-none}"
  cache="${CACHE_DIR:-${RUNNER_TEMP:-/tmp}/perfgate-pr-cache}"
  seed="${CACHE_SEED:-$base/cache}"
  for value in "$history" "$cache"; do
    case "$value/" in "$base"/*)
      echo "::error title=perfgate::a pull request's run must not write $value: trusted runs read what is under $base"
      exit 2 ;;
    esac
  done
else
  history="${HISTORY:-$base/history.db}"
  cache="${CACHE_DIR:-$base/cache}"
  seed="${CACHE_SEED:-}"
fi
if [ "${ACTIONS_CACHE:-}" = "true" ] && [ -z "${CACHE_DIR:-}" ]; then
  # actions/cache restores into one fixed path (its key includes the path): the same for pull requests and
  # pushes, in this job's temporary directory; only a push run of the default branch saves it (action.yml)
  cache="${RUNNER_TEMP:-/tmp}/perfgate-kernel-cache"
  seed=""
fi

# the dashboard's last build, kept between jobs: the next `perfgate report --html` rewrites only what the runs
# stored since changed. On a persistent runner it stays under $base; where nothing stays (ephemeral runners,
# a history on a server) the action restores it with actions/cache, which only a default-branch run saves
if [ "$pr" = 1 ]; then
  site="${RUNNER_TEMP:-/tmp}/perfgate-pr-site"
else
  site="$base/site"
fi
site_restore=false
[ -f "$site/.perfgate-manifest.json" ] || site_restore=true

rm -rf "$results"
mkdir -p "$results" "$cache/triton" "$cache/kernels"
if [ -n "$seed" ] && [ -d "$seed" ] && [ -z "$(ls -A "$cache/triton")" ] && [ -z "$(ls -A "$cache/kernels")" ]; then
  # a per-PR cache starts as a copy of the trusted one: warm, and nothing written here is read by trusted runs
  cp -a "$seed/." "$cache/"
  echo "perfgate: cache seeded from $seed"
fi
{
  echo "TRITON_CACHE_DIR=$cache/triton"
  echo "PERFGATE_KERNEL_CACHE=$cache/kernels"
  echo "PERFGATE_CUBIN_CACHE=$cache/cubins"
  if [ -n "$server" ]; then
    echo "PERFGATE_DB=$server"
  elif [ "$history" != "none" ]; then
    mkdir -p "$(dirname "$history")"
    echo "PERFGATE_DB=$history"
  fi
} >> "$GITHUB_ENV"
# the build caches' key: what invalidates every compiled kernel at once (the action adds the kernel sources' hash)
versions=$("${PYTHON:-python3}" -c 'import importlib.metadata as m
def v(d):
    try:
        return m.version(d)
    except m.PackageNotFoundError:
        return "none"
print("torch" + v("torch") + "-triton" + v("triton"))' 2>/dev/null || echo "unknown")
{
  echo "dir=$results"
  echo "cache=$cache"
  echo "cache-key=perfgate-kernels-${RUNNER_OS:-os}-${versions//[^A-Za-z0-9._+-]/_}"
  echo "site=$site"
  echo "site-restore=$site_restore"
  ref="${GITHUB_REF_NAME:-local}"
  echo "site-key=perfgate-site-${RUNNER_OS:-os}-${ref//[^A-Za-z0-9._+-]/_}"
} >> "$GITHUB_OUTPUT"
shown="$history"; [ -n "$server" ] && shown="the server of db-url"
echo "perfgate: history ${shown}, caches ${cache}, results ${results}"
