#!/usr/bin/env bash
# End-to-end check as a user would: `agentstream serve` on loopback, then the real `useChat` page in
# headless Chromium (two turns) and the real `ai` node clients (v7, v6, v5, v6-strict).
# Screenshot: .cache/e2e/chat.png
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/clients.sh --browser
PORT=${E2E_PORT:-18731}
OUT=.cache/e2e
mkdir -p "$OUT"
.venv/bin/agentstream serve --port "$PORT" --delay-ms 5 >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PORT/api/agents" >/dev/null && break
  sleep 0.1
done
BACKEND="http://127.0.0.1:$PORT/api/chat"
cd .cache/clients
for ai in current v6 v5 v6-strict; do
  flag=(); [ "$ai" != current ] && flag=(--ai "$ai")
  echo "== node client ($ai)"
  node node-client.mjs "$BACKEND" --prompt "What is the weather in Berlin?" --quiet "${flag[@]}" >"../e2e/node-$ai.json"
  head -c 300 "../e2e/node-$ai.json"; echo
done
echo "== browser (useChat, two turns)"
node browser-check.mjs --backend "$BACKEND" --screenshot ../e2e/chat.png \
  --prompt "What is the weather in Berlin?" --prompt "Explain how rainbows form" | tee ../e2e/browser.json | head -c 1500
echo
echo "screenshot: .cache/e2e/chat.png"
