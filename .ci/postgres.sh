#!/usr/bin/env bash
# A throwaway PostgreSQL server for the history's server tests (Debian's `postgresql` package).
#
#   eval "$(bash .ci/postgres.sh start)"   # exports PERFGATE_TEST_PG_URL (and PERFGATE_TEST_PG_DIR)
#   bash .ci/postgres.sh stop              # stops it and removes its directory
#
# The cluster lives in a fresh temporary directory owned by the postgres user (initdb + pg_ctl, as that
# user when run as root), listens on 127.0.0.1 only, on PERFGATE_PG_PORT, with a password
# (scram-sha-256), so the tests see a URL with credentials as a fleet would. Without PERFGATE_PG_PORT it
# takes a free port. It installs nothing: .ci/run
# installs the package. When it cannot start, it says why on stderr, prints nothing on stdout and exits 1
# (the tests that need a server then skip with that reason).
set -euo pipefail

pg_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
  done
  command -v initdb > /dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

as_owner() {  # run a server command as the postgres user when we are root (initdb refuses root)
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local bin port dir password
  bin=$(pg_bin) || { echo "postgres.sh: no initdb (install Debian's postgresql package)" >&2; exit 1; }
  port=${PERFGATE_PG_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
  dir=$(mktemp -d /tmp/perfgate-pg.XXXXXX)
  password=$(python3 -c 'import secrets; print(secrets.token_hex(12))')
  printf '%s\n' "$password" > "$dir/pwfile"
  if [ "$(id -u)" = 0 ]; then chown -R postgres: "$dir"; fi
  chmod 700 "$dir"
  as_owner "$bin/initdb" -D "$dir/data" -U perfgate --pwfile="$dir/pwfile" --auth=scram-sha-256 \
    -E UTF8 --locale=C.UTF-8 > "$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  rm -f "$dir/pwfile"
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200 -c fsync=off" start > /dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  echo "export PERFGATE_TEST_PG_DIR=$dir"
  echo "export PERFGATE_TEST_PG_URL=postgresql+psycopg://perfgate:$password@127.0.0.1:$port/postgres"
}

stop() {
  local bin dir=${PERFGATE_TEST_PG_DIR:-}
  [ -n "$dir" ] && [ -d "$dir/data" ] || { echo "postgres.sh: PERFGATE_TEST_PG_DIR names no cluster" >&2; exit 1; }
  bin=$(pg_bin)
  as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop > /dev/null || true
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
