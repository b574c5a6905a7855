#!/usr/bin/env bash
# Make a throwaway Redis server available on 127.0.0.1:56379 for the test suite.
#
#   scripts/redis.sh          install Debian's redis-server (only if missing), start, wait; idempotent
#   scripts/redis.sh stop     stop this checkout's server
#   scripts/redis.sh remove   stop it and delete its directory
#   scripts/redis.sh status   say whether something answers PING on the port
#
# Tests connect with AGENTSTREAM_TEST_REDIS_URL, default redis://127.0.0.1:56379/0. A server already
# answering on the port is reused, whoever started it. The server keeps nothing on disk (no RDB, no
# AOF) and lives in <system temp dir>/agentstream-redis-<user>-<hash of the checkout path> (or
# $AGENTSTREAM_REDIS_DIR): never point anything real at it.
set -euo pipefail

PORT="${AGENTSTREAM_REDIS_PORT:-56379}"
HOST=127.0.0.1
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KEY="$(printf '%s' "$ROOT" | sha256sum | cut -c1-12)"
BASE="${AGENTSTREAM_REDIS_DIR:-${TMPDIR:-/tmp}/agentstream-redis-$(id -un)-$KEY}"
PIDFILE="$BASE/redis.pid"
LOG="$BASE/server.log"
URL="redis://$HOST:$PORT/0"
CMD="${1:-start}"

say() { echo "redis.sh: $*"; }
as_root() { if [[ "$(id -u)" == 0 ]]; then "$@"; else sudo "$@"; fi; }
ready() { command -v redis-cli >/dev/null && [[ "$(redis-cli -h "$HOST" -p "$PORT" ping 2>/dev/null)" == PONG ]]; }

case "$CMD" in
  stop | remove)
    if [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      redis-cli -h "$HOST" -p "$PORT" shutdown nosave >/dev/null 2>&1 || kill "$(cat "$PIDFILE")"
      say "stopped server on $HOST:$PORT"
    else
      say "no server of this checkout is running (pid file $PIDFILE)"
    fi
    if [[ "$CMD" == remove && -d "$BASE" ]]; then
      rm -rf "$BASE"
      say "removed $BASE"
    fi
    exit 0
    ;;
  status)
    if ready; then say "answering on $HOST:$PORT ($URL)"; exit 0; fi
    say "not answering on $HOST:$PORT"
    exit 1
    ;;
  start) ;;
  *)
    echo "usage: $0 [start|stop|remove|status]" >&2
    exit 2
    ;;
esac

# 1. Binaries (Debian's redis-server package; redis-tools brings redis-cli).
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  say "redis-server missing: apt-get update && apt-get install -y redis-server"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server redis-tools
  # The package may start its own server on 6379; we leave it alone (we use our own port).
fi

# 2. Already up? Reuse.
if ready; then
  say "already answering on $HOST:$PORT; reusing it ($URL)"
  exit 0
fi

# 3. Start, daemonized, loopback only, nothing persisted.
mkdir -p -m 700 "$BASE"
redis-server --bind "$HOST" --port "$PORT" --protected-mode yes --daemonize yes \
  --pidfile "$PIDFILE" --logfile "$LOG" --dir "$BASE" --save "" --appendonly no >/dev/null
for _ in $(seq 1 100); do
  if ready; then
    say "ready on $HOST:$PORT ($URL)"
    exit 0
  fi
  sleep 0.1
done
say "server started but not answering on $HOST:$PORT; see $LOG" >&2
exit 1
