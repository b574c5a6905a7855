#!/usr/bin/env bash
# End-to-end check as a user would: `agentstream serve` on loopback, then the project's useChat page
# (tests/clients/web) in headless Chromium for two turns, the real `ai` node clients (v7, v6, v5,
# strict v6) for one, and a human-in-the-loop round trip (approve, decline, a suspended tool
# resumed) with the real clients. Reports and the screenshot go to .cache/e2e/ (chat.png).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/clients.sh --browser
PORT=${E2E_PORT:-18731}
# The useChat page is served from its own origin: the server must allow it (serve refuses
# cross-origin requests by default).
PAGE_PORT=${E2E_PAGE_PORT:-18732}
OUT="$PWD/.cache/e2e"
CLIENTS="$PWD/.cache/clients"
mkdir -p "$OUT"
.venv/bin/agentstream serve --port "$PORT" --delay-ms 5 --allow-origin "http://127.0.0.1:$PAGE_PORT" >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PORT/api/agents" >/dev/null && break
  kill -0 "$SERVER" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
  sleep 0.1
done
BACKEND="http://127.0.0.1:$PORT/api/chat/demo"
for ai in v7 v6 v5 v6-strict; do
  echo "== node client ($ai)"
  node "$CLIENTS/node-client.mjs" "$BACKEND" --prompt "What is the weather in Berlin?" --ai "$ai" --strict \
    >"$OUT/node-$ai.json"
done
# serve streams the v5 UI protocol: the clients answer with Mastra's {resumeData, runId, toolCallId}.
# A decline is answered by ai 7 only: Mastra streams `tool-output-denied` in v5 too, which ai 5's
# strict chunk schema rejects (tests/data/conformance/aisdk/tool-output-denied.json records it).
echo "== human in the loop (approval-client)"
node "$CLIENTS/approval-client.mjs" "$BACKEND" --ai v5 --prompt "book a table at Luigi for 4" --approve \
  >"$OUT/approve-v5.json"
node "$CLIENTS/approval-client.mjs" "$BACKEND" --ai v7 --prompt "book a table at Noma for 2" \
  --resume '{"approved": false, "reason": "too far"}' >"$OUT/decline-v7.json"
node "$CLIENTS/approval-client.mjs" "$BACKEND" --ai v5 --prompt "pick a time at Luigi" --resume '{"time": "21:00"}' \
  >"$OUT/resume-v5.json"
python3 - "$OUT" <<'PY'
import json, sys
expected = {
    "approve-v5": "is booked",
    "decline-v7": "I have not made the booking (too far)",
    "resume-v5": "21:00 at Luigi it is.",
}
for name, wanted in expected.items():
    report = json.load(open(f"{sys.argv[1]}/{name}.json"))
    message = report["assistantMessage"]
    text = "".join(p.get("text", "") for p in message["parts"] if p["type"] == "text")
    roles = [m["role"] for m in report["messages"]]
    ok = report["errors"] == [] and roles == ["user", "assistant"] and message["id"] == report["first"]["id"]
    if not ok or wanted not in text:
        sys.exit(f"e2e: {name}: expected one continued assistant message saying {wanted!r}, got {roles} {text[:200]!r} errors={report['errors']}")
    print(f"  {name}: {text[:100]!r}")
PY
echo "== browser (useChat, two turns)"
node "$CLIENTS/browser-check.mjs" --backend "$BACKEND" --page-port "$PAGE_PORT" --screenshot "$OUT/chat.png" \
  --prompt "What is the weather in Berlin?" --prompt "Explain how rainbows form" >"$OUT/browser.json"
python3 - "$OUT/browser.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for turn in report["turns"]:
    print(f"  {turn['prompt']!r} -> {turn['status']}: {(turn['assistantText'] or '')[:100]!r}")
print(f"  requests: {', '.join(report['requests'])}; parts: {[p['type'] for p in report['domParts']]}")
PY
echo "reports and screenshot: .cache/e2e/ (chat.png)"
