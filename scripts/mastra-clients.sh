#!/usr/bin/env bash
# Install Mastra's own client SDK, Studio and a reference Mastra server (tests/clients/mastra-server)
# into .cache/mastra-server (git-ignored) with `npm ci`: the exact versions of its package-lock.json
# (@mastra/client-js 1.47, mastra 1.31 for `mastra studio`, @mastra/core + @mastra/deployer for
# reference-server.mjs, playwright-core for Studio in Debian's chromium; scripts/clients.sh
# --browser installs chromium).
#
# Idempotent: `npm ci` runs again only when package.json / package-lock.json changed. The sources
# are copied beside the install (node resolves imports from node_modules next to a script).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
SRC="$REPO/tests/clients/mastra-server"
DEST="$REPO/.cache/mastra-server"
say() { echo "mastra-clients.sh: $*" >&2; }
hash_of() { (cd "$SRC" && LC_ALL=C sha256sum "$@") | sha256sum | cut -d' ' -f1; }

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  say "node and npm are needed (scripts/clients.sh installs them)"
  exit 1
fi
mkdir -p "$DEST"
tar -C "$SRC" --exclude=./node_modules -cf - . | tar -C "$DEST" -xf -
WANT="$(hash_of package.json package-lock.json)"
if [[ "$WANT" != "$(cat "$DEST/.installed" 2>/dev/null || true)" || ! -d "$DEST/node_modules/@mastra/client-js" ]]; then
  say "npm ci in $DEST"
  if ! (cd "$DEST" && npm ci --no-audit --no-fund --loglevel=error >"$DEST/npm-ci.log" 2>&1); then
    cat "$DEST/npm-ci.log" >&2
    exit 1
  fi
  echo "$WANT" >"$DEST/.installed"
fi
