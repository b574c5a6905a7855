#!/usr/bin/env bash
# Services and tools the test suite needs that pip cannot install.
set -euo pipefail
here="$(dirname "$0")"
bash "$here/postgres.sh"
bash "$here/redis.sh"  # resumable streams over Redis (AGENTSTREAM_TEST_REDIS_URL)
bash "$here/clients.sh" --browser  # chromium (Debian) for the chat page test
bash "$here/mcp.sh"  # tests/mcp: server-everything, the MCP conformance suite, the Inspector (npm, Node 22)
