#!/usr/bin/env bash
# Install the Mastra reference bench (bench/reference) into .cache/reference-bench (git-ignored):
# sources copied beside the install, `npm ci` only when package.json / package-lock.json changed.
# bench/bench_smooth.py runs this itself; prints the install directory on stdout.
set -euo pipefail
SRC="$(cd "$(dirname "$0")" && pwd)"
DEST="$(cd "$SRC/../.." && pwd)/.cache/reference-bench"
mkdir -p "$DEST"
tar -C "$SRC" --exclude=./node_modules -cf - . | tar -C "$DEST" -xf -
WANT="$(cd "$SRC" && sha256sum package.json package-lock.json | sha256sum | cut -d' ' -f1)"
if [[ "$WANT" != "$(cat "$DEST/.installed" 2>/dev/null || true)" || ! -d "$DEST/node_modules/@mastra/core" ]]; then
  echo "reference/install.sh: npm ci in $DEST" >&2
  if ! (cd "$DEST" && npm ci --no-audit --no-fund --loglevel=error >"$DEST/npm-ci.log" 2>&1); then
    cat "$DEST/npm-ci.log" >&2
    exit 1
  fi
  echo "$WANT" >"$DEST/.installed"
fi
echo "$DEST"
