#!/usr/bin/env bash
# A local cluster for trying durable background tasks: PostgreSQL (scripts/postgres.sh), Redis when
# scripts/redis.sh exists, two `agentstream worker` and two `agentstream serve` processes on loopback.
#
#   scripts/cluster.sh            start everything, print the URLs, stop all on Ctrl-C
#
# APP (default examples.durable_demo:mastra) is what the servers serve; TOOLS (default
# examples.durable_demo:tools) what the workers run; PORT (default 8001) the first server's port.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BIN="${BIN:-$ROOT/.venv/bin}"
APP="${APP:-examples.durable_demo:mastra}"
TOOLS="${TOOLS:-examples.durable_demo:tools}"
PORT="${PORT:-8001}"
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
if [[ -x scripts/redis.sh || -f scripts/redis.sh ]]; then bash scripts/redis.sh; fi
for i in 1 2; do
  "$BIN/agentstream" worker "$TOOLS" >"$LOGS/worker-$i.log" 2>&1 &
  PIDS+=($!)
done
for i in 0 1; do
  "$BIN/agentstream" serve --app "$APP" --host 127.0.0.1 --port $((PORT + i)) >"$LOGS/server-$i.log" 2>&1 &
  PIDS+=($!)
done
echo "cluster.sh: servers http://127.0.0.1:$PORT and http://127.0.0.1:$((PORT + 1)), two workers; logs in $LOGS; Ctrl-C stops"
wait -n "${PIDS[@]}" || true
echo "cluster.sh: a process exited; see $LOGS" >&2
exit 1
