#!/usr/bin/env bash
# Install the project's real-AI-SDK client checks (tests/clients) into .cache/clients (git-ignored).
#
#   scripts/clients.sh            sources + `npm ci` (the node clients: ai v7, v6, v5, strict v6)
#   scripts/clients.sh --browser  also Debian's chromium (apt, if missing) and the vite build of the
#                                 useChat page (tests/clients/web)
#
# Idempotent: `npm ci` runs again only when package.json / package-lock.json changed, the page is
# rebuilt only when its sources changed. Node scripts import from node_modules next to them, so the
# sources are copied beside the install rather than run from tests/clients.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
SRC="$REPO/tests/clients"
DEST="$REPO/.cache/clients"
BROWSER=0
case "${1:-}" in
  "") ;;
  --browser) BROWSER=1 ;;
  *) echo "usage: $0 [--browser]" >&2; exit 2 ;;
esac

say() { echo "clients.sh: $*" >&2; }
as_root() { if [[ "$(id -u)" == 0 ]]; then "$@"; else sudo "$@"; fi; }
apt_install() {
  say "apt-get install $*"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
hash_of() { (cd "$SRC" && LC_ALL=C sha256sum "$@") | sha256sum | cut -d' ' -f1; }

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  apt_install nodejs npm
fi

# 1. Sources: copied every run (cheap), so an edit in tests/clients is what the next test runs.
mkdir -p "$DEST"
tar -C "$SRC" --exclude=./node_modules --exclude=./web/dist -cf - . | tar -C "$DEST" -xf -

# 2. Packages: exactly the lock file's versions.
WANT="$(hash_of package.json package-lock.json)"
if [[ "$WANT" != "$(cat "$DEST/.installed" 2>/dev/null || true)" || ! -d "$DEST/node_modules" ]]; then
  say "npm ci in $DEST"
  if ! (cd "$DEST" && npm ci --no-audit --no-fund --loglevel=error >"$DEST/npm-ci.log" 2>&1); then
    cat "$DEST/npm-ci.log" >&2
    exit 1
  fi
  echo "$WANT" >"$DEST/.installed"
fi

[[ "$BROWSER" == 1 ]] || exit 0

# 3. The browser (Debian's; playwright-core drives it, nothing is downloaded by playwright).
if [[ -z "${AGENTSTREAM_CHROMIUM:-}" ]] && ! command -v chromium >/dev/null; then
  apt_install chromium
fi

# 4. The useChat page.
PAGE="$(cd "$SRC" && find web -path web/dist -prune -o -type f -print | LC_ALL=C sort | tr '\n' ' ')"
# shellcheck disable=SC2086  # a list of relative paths without spaces
WANT="$(hash_of package-lock.json $PAGE)"
if [[ "$WANT" != "$(cat "$DEST/.built" 2>/dev/null || true)" || ! -f "$DEST/web/dist/index.html" ]]; then
  say "building the useChat page (vite)"
  if ! (cd "$DEST" && npm run --silent build >"$DEST/build.log" 2>&1); then
    cat "$DEST/build.log" >&2
    exit 1
  fi
  echo "$WANT" >"$DEST/.built"
fi
