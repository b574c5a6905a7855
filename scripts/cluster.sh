#!/usr/bin/env bash
# A local cluster for trying durable chat answers and background tasks: PostgreSQL
# (scripts/postgres.sh), Redis (scripts/redis.sh), two `agentstream worker` and two
# `agentstream serve` processes on loopback. The servers hand chat turns to the workers, which write
# the answers to Redis; either server streams and resumes any answer.
#
#   scripts/cluster.sh            start everything, print the URLs, stop all on Ctrl-C
#
# APP (default examples.durable_demo:mastra) is what the servers serve and the workers answer with;
# TOOLS (default examples.durable_demo:tools) the background tools the workers run; REDIS (default
# redis://127.0.0.1:56379/0) the stream store; PORT (default 8001) the first server's port.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BIN="${BIN:-$ROOT/.venv/bin}"
APP="${APP:-examples.durable_demo:mastra}"
TOOLS="${TOOLS:-examples.durable_demo:tools}"
PORT="${PORT:-8001}"
REDIS="${REDIS:-redis://127.0.0.1:56379/0}"
export AGENTSTREAM_DURABLE_DB="${AGENTSTREAM_DURABLE_DB:-postgresql://postgres@127.0.0.1:54329/postgres}"
LOGS="$(mktemp -d)"
PIDS=()

stop() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "cluster.sh: stopped (logs in $LOGS)"
}
trap stop EXIT INT TERM

bash scripts/postgres.sh
bash scripts/redis.sh
for i in 1 2; do
  "$BIN/agentstream" worker "$TOOLS" --app "$APP" --stream-store "$REDIS" >"$LOGS/worker-$i.log" 2>&1 &
  PIDS+=($!)
done
for i in 0 1; do
  "$BIN/agentstream" serve --app "$APP" --host 127.0.0.1 --port $((PORT + i)) \
    --durable-db "$AGENTSTREAM_DURABLE_DB" --stream-store "$REDIS" >"$LOGS/server-$i.log" 2>&1 &
  PIDS+=($!)
done
echo "cluster.sh: servers http://127.0.0.1:$PORT and http://127.0.0.1:$((PORT + 1)), two workers; logs in $LOGS; Ctrl-C stops"
wait -n "${PIDS[@]}" || true
echo "cluster.sh: a process exited; see $LOGS" >&2
exit 1
