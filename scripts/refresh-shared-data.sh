#!/bin/sh
# Refresh the vendored test data from a shared/ folder laid beside the repository (or $1).
#
#   scripts/refresh-shared-data.sh [SHARED_DIR]     (also: make refresh-data)
#
# The only script that may read ../shared: nothing else depends on it, and the tests read only
# tests/data/. After a refresh, run `make test`: new vectors for features not built yet fail and
# get an expected-failure mark naming their issue (tests/conformance.py, NOT_BUILT).
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${1:-$(dirname "$REPO")/shared}
DATA="$REPO/tests/data"
for part in conformance provider-recordings; do
  if [ ! -d "$SHARED/$part" ]; then
    echo "refresh-shared-data.sh: no $SHARED/$part (pass the shared folder as the first argument)" >&2
    exit 2
  fi
done
for part in conformance provider-recordings; do
  rm -rf "${DATA:?}/$part"
  cp -R "$SHARED/$part" "$DATA/$part"
done
mkdir -p "$DATA/docs"
cp "$SHARED/docs/mastra-spec.md" "$DATA/docs/mastra-spec.md"
chmod -R u+w "$DATA"
# Mastra's client SDK, Studio and reference server (scripts/mastra-clients.sh installs them).
if [ -d "$SHARED/clients/mastra-server" ]; then
  rm -rf "$REPO/tests/clients/mastra-server"
  cp -R "$SHARED/clients/mastra-server" "$REPO/tests/clients/mastra-server"
  chmod -R u+w "$REPO/tests/clients/mastra-server"
fi
echo "refresh-shared-data.sh: copied conformance, provider-recordings and docs/mastra-spec.md into tests/data"
git -C "$REPO" status --short -- tests/data | head -50
