#!/usr/bin/env bash
# Services and tools the test suite needs that pip cannot install.
set -euo pipefail
here="$(dirname "$0")"
bash "$here/postgres.sh"
bash "$here/clients.sh" --browser  # chromium (Debian) for the chat page test
