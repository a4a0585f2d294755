#!/usr/bin/env bash
# The test suite on hosts unlike the developers' machine, one variant at a time, each in a fresh clone of
# HEAD whose only branch is `master`. What a variant changes is what the code really reads, not a flag the
# tests know about:
#   intel   /proc/cpuinfo (bind-mounted in a private mount namespace) says GenuineIntel,
#           "Intel(R) Xeon(R) Platinum 8480+"                                          (needs root: unshare -m)
#   nomodel /proc/cpuinfo without a "model name" line, as on Linux/aarch64 (Graviton)   (needs root: unshare -m)
#   git     no global git identity and init.defaultBranch=master (a fresh CI image's git)
#   locale  LANG/LC_ALL=de_DE.UTF-8 (made with localedef if missing) and TZ=Pacific/Kiritimati (UTC+14)
#   busy    both cores kept busy by two spinning processes for the whole run
#   unlike  all of the above at once (intel, git, locale, busy), with TZ=Etc/GMT+12 (UTC-12)
# Every variant runs in a clone on branch master. The clone is tested with this checkout's virtualenv
# (PYTHONPATH puts the clone's perfgate first, in child processes too), so the variants cost no install.
#
# usage: scripts/host_matrix.sh [--slow] [VARIANT...]     (default: intel nomodel git locale busy unlike)
#   --slow   also run the slow tests (-m slow) in each variant
# environment: VENV (default: .venv of this checkout), KEEP=1 keeps the clones (printed)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
venv=${VENV:-$repo/.venv}
slow=0
if [ "${1:-}" = "--slow" ]; then slow=1; shift; fi
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(intel nomodel git locale busy unlike)
[ -x "$venv/bin/python" ] || { echo "host_matrix: no virtualenv at $venv (set VENV)"; exit 2; }

work=$(mktemp -d /tmp/host-matrix.XXXXXX)
spinners=()
cleanup() {
  for pid in "${spinners[@]}"; do kill "$pid" 2> /dev/null || true; done
  if [ "${KEEP:-0}" = 1 ]; then echo "host_matrix: clones kept under $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# a repository whose default branch is master, and a fresh clone of it per variant
git -c init.defaultBranch=master init -q --bare "$work/origin.git"
git push -q "$work/origin.git" "HEAD:refs/heads/master"

fake_cpuinfo() { # $1: intel | nomodel
  local out=$work/cpuinfo.$1
  case $1 in
    intel) sed -e 's/^vendor_id.*/vendor_id\t: GenuineIntel/' \
      -e 's/^model name.*/model name\t: Intel(R) Xeon(R) Platinum 8480+/' /proc/cpuinfo > "$out" ;;
    nomodel) grep -v -e '^model name' -e '^vendor_id' /proc/cpuinfo > "$out" ;;
  esac
  echo "$out"
}

ensure_locale() {
  if ! locale -a 2> /dev/null | grep -qi '^de_DE\.utf-\?8$'; then
    localedef -i de_DE -f UTF-8 de_DE.UTF-8 || { echo "host_matrix: cannot make de_DE.UTF-8"; exit 2; }
  fi
}

run_variant() {
  local name=$1 clone=$work/$1 cpuinfo="" env=() spin=0
  git clone -q "$work/origin.git" "$clone"
  local gitconfig=$work/gitconfig.$name
  printf '[init]\n\tdefaultBranch = master\n' > "$gitconfig"
  case $name in
    intel) cpuinfo=$(fake_cpuinfo intel) ;;
    nomodel) cpuinfo=$(fake_cpuinfo nomodel) ;;
    git) env+=(GIT_CONFIG_GLOBAL="$gitconfig" GIT_CONFIG_NOSYSTEM=1) ;;
    locale) ensure_locale; env+=(LANG=de_DE.UTF-8 LC_ALL=de_DE.UTF-8 TZ=Pacific/Kiritimati) ;;
    busy) spin=1 ;;
    unlike)
      cpuinfo=$(fake_cpuinfo intel); ensure_locale; spin=1
      env+=(GIT_CONFIG_GLOBAL="$gitconfig" GIT_CONFIG_NOSYSTEM=1 LANG=de_DE.UTF-8 LC_ALL=de_DE.UTF-8 TZ=Etc/GMT+12) ;;
    *) echo "host_matrix: unknown variant $name"; exit 2 ;;
  esac
  if [ "$spin" = 1 ]; then
    for _ in 1 2; do (while :; do :; done) & spinners+=($!); done
  fi
  local cmd=(env "${env[@]}" PATH="$venv/bin:$PATH" PYTHONPATH="$clone" TRITON_INTERPRET=1 CI=true
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -n 2 --ignore=tests/test_site_browser.py)
  [ "$slow" = 1 ] && cmd+=(-m "slow or not slow")
  local start=$SECONDS rc=0
  echo "=== $name: $(cd "$clone" && git branch --show-current) branch, ${env[*]:-host environment}${cpuinfo:+, cpuinfo $(grep -m1 -e '^model name' "$cpuinfo" | cut -d: -f2 || echo ' (no model name)')}"
  if [ -n "$cpuinfo" ]; then
    (cd "$clone" && unshare -m bash -c 'mount --bind "$0" /proc/cpuinfo && exec "$@"' "$cpuinfo" "${cmd[@]}") \
      > "$work/$name.log" 2>&1 || rc=$?
  else
    (cd "$clone" && "${cmd[@]}") > "$work/$name.log" 2>&1 || rc=$?
  fi
  for pid in "${spinners[@]}"; do kill "$pid" 2> /dev/null || true; done
  spinners=()
  echo "    exit $rc in $((SECONDS - start)) s: $(tail -n 1 "$work/$name.log")"
  if [ "$rc" != 0 ]; then grep -E '^(FAILED|ERROR) ' "$work/$name.log" | head -n 40 || true; fi
  return "$rc"
}

failed=()
for v in "${variants[@]}"; do run_variant "$v" || failed+=("$v"); done
if [ ${#failed[@]} -gt 0 ]; then
  echo "host_matrix: failed on: ${failed[*]}"
  exit 1
fi
echo "host_matrix: every variant passed (${variants[*]})"
