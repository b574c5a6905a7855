#!/usr/bin/env bash
# Kept for old instructions: `agentstream cluster` (src/agentstream/_cli/cluster.py) does this now.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
exec "${BIN:-$ROOT/.venv/bin}/agentstream" cluster "$@"
