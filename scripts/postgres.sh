#!/usr/bin/env bash
# Make a throwaway PostgreSQL server available on 127.0.0.1:54329 (trust auth) for the test suite.
#
#   scripts/postgres.sh         install (Debian packages, only if missing), initdb, start, wait; idempotent
#   scripts/postgres.sh stop    stop this checkout's server
#   scripts/postgres.sh remove  stop it and delete its cluster directory
#   scripts/postgres.sh status  say whether something accepts connections on the port
#
# Tests connect with AGENTSTREAM_TEST_PG_DSN, default postgresql://postgres@127.0.0.1:54329/postgres.
# A server already accepting connections on the port is reused, whoever started it.
#
# The cluster lives outside the checkout, in <system temp dir>/agentstream-pg-<user>-<hash of the
# checkout path> (or $AGENTSTREAM_PG_DIR): as root it is owned by the OS user `postgres` (initdb
# refuses to run as root), and `postgres` must be able to reach it, which a checkout inside a private
# (0700) directory such as a home directory or `mktemp -d` does not allow. One stable directory
# per checkout, so `stop` finds the server that `start` made. Settings favour speed over durability
# (fsync off): never point anything real at it.
set -euo pipefail

PORT="${AGENTSTREAM_PG_PORT:-54329}"
HOST=127.0.0.1
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OWNER="$(if [[ "$(id -u)" == 0 ]]; then echo postgres; else id -un; fi)"
KEY="$(printf '%s' "$ROOT" | sha256sum | cut -c1-12)"
# Root's TMPDIR may itself be private; the sticky /tmp is what every user can enter.
TMP="$(if [[ "$(id -u)" == 0 ]]; then echo /tmp; else echo "${TMPDIR:-/tmp}"; fi)"
BASE="${AGENTSTREAM_PG_DIR:-$TMP/agentstream-pg-$OWNER-$KEY}"
DATA="$BASE/data"
LOG="$BASE/server.log"
CMD="${1:-start}"

say() { echo "postgres.sh: $*"; }

find_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [[ -x "$d/initdb" && -x "$d/pg_ctl" && -x "$d/postgres" ]]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

# Run a command as the cluster owner: `postgres` when we are root, ourselves otherwise.
as_owner() {
  if [[ "$(id -u)" == 0 ]]; then
    (cd / && runuser -u postgres -- "$@")  # from /: the checkout may be closed to postgres
  else
    "$@"
  fi
}

ready() {
  local bindir="$1"
  "$bindir/pg_isready" -q -h "$HOST" -p "$PORT" -d postgres -U postgres >/dev/null 2>&1
}

BINDIR="$(find_bindir || true)"

case "$CMD" in
  stop | remove)
    if [[ -z "$BINDIR" || ! -f "$DATA/PG_VERSION" ]]; then
      say "no cluster in $DATA; nothing to stop"
    elif as_owner "$BINDIR/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
      as_owner "$BINDIR/pg_ctl" -D "$DATA" stop -m fast -w >/dev/null
      say "stopped server on $HOST:$PORT (data $DATA)"
    else
      say "server in $DATA is not running"
    fi
    if [[ "$CMD" == remove && -d "$BASE" ]]; then
      rm -rf "$BASE"
      say "removed $BASE"
    fi
    exit 0
    ;;
  status)
    if [[ -n "$BINDIR" ]] && ready "$BINDIR"; then
      say "accepting connections on $HOST:$PORT"
      exit 0
    fi
    say "not accepting connections on $HOST:$PORT"
    exit 1
    ;;
  start) ;;
  *)
    echo "usage: $0 [start|stop|remove|status]" >&2
    exit 2
    ;;
esac

start_ts=$(date +%s)

# 1. Binaries (Debian's postgresql package puts them under /usr/lib/postgresql/<ver>/bin).
if [[ -z "$BINDIR" ]]; then
  if [[ "$(id -u)" != 0 ]]; then
    say "PostgreSQL server binaries not found and not root: run as root or 'apt-get install postgresql'" >&2
    exit 1
  fi
  say "server binaries missing: apt-get update && apt-get install -y postgresql"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends postgresql
  BINDIR="$(find_bindir)" || { say "install finished but no initdb/pg_ctl under /usr/lib/postgresql/*/bin" >&2; exit 1; }
  # The package may start its own cluster on 5432; we leave it alone (we use our own port).
else
  say "using server binaries in $BINDIR"
fi

# 2. Already up? Reuse.
if ready "$BINDIR"; then
  say "already accepting connections on $HOST:$PORT; reusing it"
  exit 0
fi

# 3. The OS user that owns the cluster.
if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
  say "creating system user postgres"
  useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/bash postgres
fi

# A fresh directory of our own: in the shared temp dir someone else could have made it first.
if [[ ! -d "$BASE" ]]; then
  mkdir -m 700 "$BASE"
  if [[ "$(id -u)" == 0 ]]; then chown "$OWNER:" "$BASE"; fi
fi
if [[ "$(stat -c %U "$BASE")" != "$OWNER" ]]; then
  say "$BASE belongs to $(stat -c %U "$BASE"), not $OWNER; remove it or set AGENTSTREAM_PG_DIR" >&2
  exit 1
fi
if ! as_owner test -w "$BASE"; then
  say "user $OWNER cannot write to $BASE; set AGENTSTREAM_PG_DIR to a directory $OWNER can reach" >&2
  exit 1
fi

# 4. initdb once.
if [[ ! -f "$DATA/PG_VERSION" ]]; then
  say "initdb into $DATA"
  as_owner "$BINDIR/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --no-locale >"$BASE/initdb.log" 2>&1 \
    || { cat "$BASE/initdb.log" >&2; exit 1; }
  cat >>"$DATA/postgresql.conf" <<EOF

# --- scripts/postgres.sh (test cluster: loopback only, no unix socket, no durability) ---
listen_addresses = '$HOST'
port = $PORT
unix_socket_directories = ''
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
else
  say "reusing cluster in $DATA"
fi

# 5. Start (pg_ctl copes with a stale postmaster.pid) and wait until it accepts connections.
say "starting server on $HOST:$PORT (log $LOG)"
if ! as_owner "$BINDIR/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null; then
  say "pg_ctl start failed; last log lines:" >&2
  tail -n 30 "$LOG" >&2 || true
  exit 1
fi
for _ in $(seq 1 100); do
  if ready "$BINDIR"; then
    say "ready on $HOST:$PORT after $(($(date +%s) - start_ts))s (dsn postgresql://postgres@$HOST:$PORT/postgres)"
    exit 0
  fi
  sleep 0.1
done
say "server started but not accepting connections on $HOST:$PORT; see $LOG" >&2
exit 1
