"""Which provider class, base path and options replay each recording."""

from __future__ import annotations

from typing import Any

CHAT, RESPONSES, ANTHROPIC = "chat", "responses", "anthropic"

# file -> (api, base path, model kwargs, turns to drive (None = all));
# RECORDED_PROMPTS: turns whose prompt is taken from the recording (the client retried on its own).
CASES: dict[str, tuple[str, str, dict[str, Any], int | None]] = {
    "openai-chat/text-stream-usage.json": (CHAT, "/v1", {}, None),
    "openai-chat/tool-call-then-text-two-turns.json": (CHAT, "/v1", {}, None),
    "openai-chat/parallel-tools-three-turn-loop.json": (CHAT, "/v1", {}, None),
    "openai-chat/parallel-tools-args-split.json": (CHAT, "/v1", {}, None),
    "openai-chat/moderation-trailer-chunk.json": (CHAT, "/v1", {}, None),
    "deepseek/reasoning-content-stream.json": (CHAT, "", {"provider": "deepseek"}, None),
    "groq/tool-use-failed-error-event.json": (CHAT, "/openai/v1", {"provider": "groq"}, None),
    "groq/compound-web-search-executed-tools.json": (CHAT, "/openai/v1", {"provider": "groq"}, None),
    "mistral/magistral-thinking-content-parts.json": (CHAT, "/v1", {"provider": "mistral"}, None),
    "openrouter/claude-text-cache-control.json": (CHAT, "/api/v1", {"provider": "openrouter"}, None),
    "openrouter/in-stream-error-chunk.json": (CHAT, "/api/v1", {"provider": "openrouter"}, None),
    "openrouter/reasoning-details-claude.json": (CHAT, "/api/v1", {"provider": "openrouter"}, None),
    "openrouter/web-search-annotations.json": (CHAT, "/api/v1", {"provider": "openrouter"}, None),
    "zai/glm-reasoning-content.json": (CHAT, "/api/paas/v4", {"provider": "zai"}, None),
    "huggingface/novita-llama-text.json": (CHAT, "/novita/v3/openai", {"provider": "huggingface"}, None),
    "huggingface/together-deepseek-r1-think-tags.json": (
        CHAT,
        "/together/v1",
        {"provider": "huggingface", "parse_think_tags": True},
        None,
    ),
    "crusoe/llama-text-usage.json": (CHAT, "/v1", {"provider": "crusoe"}, None),
    "snowflake/reasoning-details.json": (CHAT, "/api/v2/cortex/v1", {"provider": "snowflake"}, None),
    "openai-responses/function-call-then-text.json": (RESPONSES, "/v1", {}, None),
    "openai-responses/reasoning-item-function-call-usage.json": (RESPONSES, "/v1", {}, None),
    "openai-responses/reasoning-summary-deltas.json": (RESPONSES, "/v1", {}, None),
    "openai-responses/text-with-logprobs.json": (RESPONSES, "/v1", {}, None),
    "openai-responses/text-and-function-call-one-response.json": (RESPONSES, "/v1", {}, None),
    "openai-responses/background-resume-starting-after.json": (RESPONSES, "/v1", {}, 1),
    "openai-responses/web-search-builtin-tool.json": (RESPONSES, "/v1", {}, None),
    "deepseek/responses-text-reasoning.json": (RESPONSES, "", {"provider": "deepseek"}, None),
    "deepseek/responses-function-tool.json": (RESPONSES, "", {"provider": "deepseek"}, None),
    "openrouter/responses-raw-reasoning-text.json": (RESPONSES, "/api/v1", {"provider": "openrouter"}, None),
    "anthropic/text-minimal.json": (ANTHROPIC, "/v1", {}, None),
    "anthropic/tool-use-then-tool-result-turn.json": (ANTHROPIC, "/v1", {}, None),
    "anthropic/thinking-signature.json": (ANTHROPIC, "/v1", {}, None),
    "anthropic/redacted-thinking.json": (ANTHROPIC, "/v1", {}, None),
    "anthropic/web-search-citations.json": (ANTHROPIC, "/v1", {}, None),
    "anthropic/mcp-servers-thinking.json": (ANTHROPIC, "/v1", {}, None),
}

RECORDED_PROMPTS = {"groq/tool-use-failed-error-event.json"}


# Recordings of providers the router does not know yet, with the issue that builds them.
# `test_not_built_provider_recordings` checks the router really has no model for each one's provider,
# so an entry goes once the provider exists (and its recording gets a case or a test of its own).
NOT_BUILT: dict[str, str] = {}

# Non-streaming calls of providers we stream from: our models always stream, so these are not
# replayed; their provider's streaming recordings are (`test_non_streaming_only` checks each really
# is a non-streaming call).
NON_STREAMING_ONLY: dict[str, str] = {
    "bedrock/converse-tool-use-two-turns-nonstream.json": "Converse (bedrock/*-stream.json are ConverseStream)",
    "mistral/tool-call-two-turns-nonstream.json": "chat without stream (mistral/magistral-*.json streams)",
}


# Recordings replayed by a provider's own test module (tests/models/test_google.py), which asserts
# the facts each one shows; non-streaming ones are sent as a one-event stream there.
GOOGLE_STREAMED = [
    "google/text-stream-usage.json",
    "google/thinking-parts-thought-signature.json",
    "google/function-calls-three-turns.json",
    "google/code-execution-parts.json",
    "google/web-search-grounding-metadata.json",
    "google/url-context-metadata.json",
    "google/native-json-output-after-function-call.json",
    "google/server-tool-call-response-parts.json",
    "google-vertex/flex-tier-text-stream.json",
]
OWN_TESTS = [
    "azure/chat-content-filter-results-nonstream.json",  # tests/models/test_azure.py
    "bedrock/text-stream.json",  # tests/models/test_bedrock.py
    "bedrock/tool-use-two-turns-stream.json",
    "bedrock/reasoning-content-signature-stream.json",
    "bedrock/native-json-output-stream.json",
    "bedrock/server-tool-code-interpreter-stream.json",
    "bedrock-mantle/responses-sequential-tools-three-turns.json",  # tests/models/test_bedrock_mantle.py
    "cohere/text-nonstream.json",  # tests/models/test_cohere.py (stream=False replays them as recorded)
    "cohere/tool-call-two-turns-citations-nonstream.json",
]
GOOGLE_ONE_SHOT = [
    "google/max-tokens-no-parts-nonstream.json",
    "google/safety-blocked-nonstream.json",
    "google/parallel-function-calls-nonstream.json",
    "google-vertex/logprobs-nonstream.json",
]
