#!/usr/bin/env bash
# Services and tools the test suite needs that pip cannot install: PostgreSQL, Redis, node's client
# checks and chromium. Each starts (or is reused) quietly; a service that cannot start ends this
# script with ONE line naming it and why (the last line its script printed), and a non-zero status,
# so `make test` stops there instead of running a suite that would fail on it. Full output of each
# step: $AGENTSTREAM_SERVICES_LOG (default <temp dir>/agentstream-test-services.<user>.log).
set -uo pipefail
here="$(dirname "$0")"
log="${AGENTSTREAM_SERVICES_LOG:-${TMPDIR:-/tmp}/agentstream-test-services.$(id -un).log}"
: >"$log"

start() {
  local name="$1"
  shift
  echo "== $name: $*" >>"$log"
  local status=0 why
  bash "$@" >>"$log" 2>&1 || status=$?
  if [[ $status != 0 ]]; then
    why="$(grep -v '^==' "$log" | grep -v '^[[:space:]]*$' | tail -n 1)"
    echo "test-services: $name cannot start (exit $status): ${why:-no output}; full log $log" >&2
    exit 1
  fi
}

start postgres "$here/postgres.sh"
start redis "$here/redis.sh" # resumable streams over Redis (AGENTSTREAM_TEST_REDIS_URL)
start "node clients and chromium" "$here/clients.sh" --browser # chromium (Debian) for the chat page tests
start "MCP servers and tools" "$here/mcp.sh" # tests/mcp: server-everything, the conformance suite, the Inspector (npm, Node 22)
start "Mastra client and Studio" "$here/mastra-clients.sh" # tests/mastra_api: @mastra/client-js, mastra studio, a reference Mastra server
echo "test-services: postgres, redis, node clients, chromium, the MCP tools and the Mastra clients ready (log $log)"
