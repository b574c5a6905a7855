#!/usr/bin/env bash
# Install the MCP reference server the MCP tests talk to into .cache/mcp (git-ignored):
# `@modelcontextprotocol/server-everything` at the version the recordings in
# tests/data/conformance/mcp/ were made with, plus the clock-freezing preload they describe.
#
# Idempotent: npm runs again only when the wanted version changed.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$REPO/.cache/mcp"
VERSION="2026.8.31"
say() { echo "mcp.sh: $*" >&2; }

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  say "node and npm are needed (scripts/clients.sh installs them)"; exit 1
fi
mkdir -p "$DEST"
# The recordings froze the server's clock at 2000-01-01T00:00:00Z (README "Reproducing").
cat >"$DEST/mcp-server-preload.mjs" <<'JS'
const FROZEN = Date.UTC(2000, 0, 1);
const RealDate = Date;
class FrozenDate extends RealDate {
  constructor(...args) { if (args.length === 0) { super(FROZEN); } else { super(...args); } }
  static now() { return FROZEN; }
}
globalThis.Date = FrozenDate;
JS
if [[ "$VERSION" != "$(cat "$DEST/.installed" 2>/dev/null || true)" || ! -f "$DEST/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ]]; then
  say "npm install @modelcontextprotocol/server-everything@$VERSION in $DEST"
  [[ -f "$DEST/package.json" ]] || echo '{"name": "agentstream-mcp-cache", "private": true}' >"$DEST/package.json"
  if ! (cd "$DEST" && npm install --no-audit --no-fund --loglevel=error \
        "@modelcontextprotocol/server-everything@$VERSION" >"$DEST/npm.log" 2>&1); then
    cat "$DEST/npm.log" >&2
    exit 1
  fi
  echo "$VERSION" >"$DEST/.installed"
fi
