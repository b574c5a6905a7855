#!/bin/sh
# Copy the shared real-AI-SDK client checks to .cache/clients (git-ignored) and install them there.
#   scripts/clients.sh            copy if missing/changed + npm ci (node clients only)
#   scripts/clients.sh --browser  also chromium (apt, if /usr/bin/chromium is missing) + vite build
# Idempotent and quiet when already done. Source: $AGENTSTREAM_SHARED/clients, else ../shared/clients.
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${AGENTSTREAM_SHARED:-$(dirname "$REPO")/shared}
SRC="$SHARED/clients"
DEST="$REPO/.cache/clients"
BROWSER=0
[ "${1:-}" = "--browser" ] && BROWSER=1

if [ ! -f "$SRC/package-lock.json" ]; then
  echo "clients.sh: no client checks at $SRC (set AGENTSTREAM_SHARED)" >&2
  exit 2
fi

# Fingerprint of the source tree (names + contents), excluding installed/built output.
fingerprint() {
  (cd "$1" && find . -path ./node_modules -prune -o -path ./web/dist -prune -o -name .stamp -prune \
      -o -type f -print | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -d' ' -f1
}
WANT=$(fingerprint "$SRC")
HAVE=$(cat "$DEST/.stamp" 2>/dev/null || true)

if [ "$WANT" != "$HAVE" ] || [ ! -d "$DEST/node_modules" ]; then
  echo "clients.sh: installing real AI SDK clients into $DEST" >&2
  mkdir -p "$DEST"
  # Copy the sources (not node_modules) and make them writable (the shared folder may be read-only).
  (cd "$SRC" && find . -path ./node_modules -prune -o -path ./web/dist -prune -o -type f -print) |
    while IFS= read -r f; do
      mkdir -p "$DEST/$(dirname "$f")"
      cp "$SRC/$f" "$DEST/$f"
      chmod u+w "$DEST/$f"
    done
  (cd "$DEST" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>"$DEST/.npm-ci.log") || {
    cat "$DEST/.npm-ci.log" >&2
    exit 1
  }
  rm -rf "$DEST/web/dist"
  echo "$WANT" >"$DEST/.stamp"
fi

if [ "$BROWSER" = 1 ]; then
  if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  fi
  if [ ! -f "$DEST/web/dist/index.html" ]; then
    (cd "$DEST" && npm run --silent build >/dev/null)
  fi
fi
