"""Amazon Bedrock ``ConverseStream`` (``POST {base}/model/{id}/converse-stream``), extra ``bedrock``.

Behaviour follows ``@ai-sdk/amazon-bedrock`` ``bedrock-chat-language-model.ts``: the body is an AWS
event stream (binary frames with CRCs, decoded by botocore's ``EventStreamBuffer``), one JSON event
per frame; text and reasoning blocks take their ``contentBlockIndex`` as id; a reasoning signature
is an empty ``reasoning-delta`` with ``providerMetadata.bedrock.signature``; ``toolUse`` blocks
stream as ``tool-input-*`` and end as a ``tool-call``; server tools (``type: server_tool_use``) are
provider-executed and their ``toolResult`` blocks become ``tool-result`` parts; ``messageStop``
gives the finish reason and the trailing ``metadata`` event the usage. Exception frames are error
parts. Requests are signed with SigV4 (botocore: credentials from the usual chain) unless a
Bedrock API key is given, which is sent as a bearer token.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import msgspec
from typing_extensions import Unpack

from ._base import CallOptions, FinishReason, StreamPart, ToolCallPart, ToolInputStartPart, ToolResultPart
from ._bedrock_prompt import bedrock_tool_config, convert_to_bedrock_messages
from ._errors import MissingAPIKeyError
from ._http import TransportOptions, _EndingTransformer, _HTTPStreamingModel, _Transformer, call_settings

__all__ = ["BedrockModel", "map_bedrock_stop_reason"]

# call option -> wire name; None: the API has no such setting (a warning when given)
_SETTINGS: dict[str, str | None] = {
    "max_output_tokens": "maxTokens",
    "temperature": "temperature",
    "top_p": "topP",
    "stop_sequences": "stopSequences",
    "seed": None,
    "presence_penalty": None,
    "frequency_penalty": None,
}


_STOP: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "content_filtered": "content-filter",
    "guardrail_intervened": "content-filter",
    "tool_use": "tool-calls",
}
_EXCEPTIONS = (
    "internalServerException",
    "modelStreamErrorException",
    "throttlingException",
    "validationException",
    "serviceUnavailableException",
)


def map_bedrock_stop_reason(reason: str | None) -> FinishReason:
    return _STOP.get(reason or "", "unknown")


def _botocore() -> Any:
    """botocore's signing, credential and event-stream modules (imported by name: it ships no types)."""
    try:
        for name in ("auth", "awsrequest", "credentials", "eventstream", "session"):
            importlib.import_module(f"botocore.{name}")
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise ImportError(
            "Amazon Bedrock needs botocore (AWS signing and event streams): pip install 'agentstream[bedrock]'"
        ) from exc
    return importlib.import_module("botocore")


class _BedrockTransformer(_EndingTransformer):
    end_marker = "messageStop"

    def __init__(self, model: BedrockModel) -> None:
        self._model = model
        self.blocks: dict[int, dict[str, Any]] = {}
        self.finish_reason: FinishReason = "unknown"
        self.usage: dict[str, Any] = {"inputTokens": None, "outputTokens": None, "totalTokens": None}
        self.metadata: dict[str, Any] = {}

    def feed(self, event: str, value: Any) -> list[StreamPart]:
        if event.startswith("exception:") or event in _EXCEPTIONS:
            return self._exception(event.removeprefix("exception:"), value)
        if event == "contentBlockStart":
            return self._start(value["contentBlockIndex"], value.get("start") or {})
        if event == "contentBlockDelta":
            return self._delta(value["contentBlockIndex"], value.get("delta") or {})
        if event == "contentBlockStop":
            return self._stop(value["contentBlockIndex"])
        if event == "messageStop":
            self.done = True
            self.finish_reason = map_bedrock_stop_reason(value.get("stopReason"))
            if value.get("additionalModelResponseFields") is not None:
                self.metadata["additionalModelResponseFields"] = value["additionalModelResponseFields"]
        elif event == "metadata":
            self._metadata(value)
        return []

    def _exception(self, kind: str, value: Any) -> list[StreamPart]:
        self.errored = True
        message = value.get("message") if isinstance(value, dict) else None
        status = {"throttlingException": 429, "serviceUnavailableException": 503}.get(kind)
        error = self._model._error(
            f"{kind}: {message or 'stream error'}",
            self._model._url,
            status=status,
            body=msgspec.json.encode(value).decode(),
            retryable=status is not None,
            data=value,
        )
        return [{"type": "error", "error": error}]

    def _metadata(self, value: dict[str, Any]) -> None:
        usage = value.get("usage") or {}
        self.usage = {
            "inputTokens": usage.get("inputTokens"),
            "outputTokens": usage.get("outputTokens"),
            "totalTokens": usage.get("totalTokens"),
        }
        if usage.get("cacheReadInputTokens") is not None:
            self.usage["cachedInputTokens"] = usage["cacheReadInputTokens"]
        if usage.get("cacheWriteInputTokens") is not None:
            self.metadata["usage"] = {"cacheWriteInputTokens": usage["cacheWriteInputTokens"]}
        if value.get("trace") is not None:
            self.metadata["trace"] = value["trace"]

    def _start(self, index: int, start: dict[str, Any]) -> list[StreamPart]:
        use = start.get("toolUse")
        if isinstance(use, dict):
            server = use.get("type") == "server_tool_use"
            self.blocks[index] = {
                "type": "tool",
                "id": use["toolUseId"],
                "name": use["name"],
                "input": "",
                "server": server,
            }
            part: ToolInputStartPart = {
                "type": "tool-input-start",
                "id": use["toolUseId"],
                "toolName": use["name"],
            }
            if server:
                part["providerExecuted"] = True
            return [part]
        result = start.get("toolResult")
        if isinstance(result, dict):
            self.blocks[index] = {
                "type": "result",
                "id": result.get("toolUseId"),
                "status": result.get("status"),
                "content": [],
            }
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[StreamPart]:
        sid = str(index)
        block = self.blocks.get(index)
        if "text" in delta:
            out: list[StreamPart] = []
            if block is None:
                self.blocks[index] = {"type": "text"}
                out.append({"type": "text-start", "id": sid})
            out.append({"type": "text-delta", "id": sid, "delta": delta["text"]})
            return out
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict):
            out = []
            if block is None:
                self.blocks[index] = {"type": "reasoning"}
                out.append({"type": "reasoning-start", "id": sid})
            if "text" in reasoning:
                out.append({"type": "reasoning-delta", "id": sid, "delta": reasoning["text"]})
            for key, meta in (("signature", "signature"), ("redactedContent", "redactedData")):
                if key in reasoning:
                    out.append(
                        {
                            "type": "reasoning-delta",
                            "id": sid,
                            "delta": "",
                            "providerMetadata": {"bedrock": {meta: reasoning[key]}},
                        }
                    )
            return out
        if isinstance(delta.get("toolUse"), dict) and block is not None and block["type"] == "tool":
            chunk = delta["toolUse"].get("input") or ""
            block["input"] += chunk
            return [{"type": "tool-input-delta", "id": block["id"], "delta": chunk}] if chunk else []
        if isinstance(delta.get("toolResult"), list) and block is not None and block["type"] == "result":
            block["content"].extend(delta["toolResult"])
        return []

    def _stop(self, index: int) -> list[StreamPart]:
        block = self.blocks.pop(index, None)
        if block is None:
            return []
        if block["type"] == "text":
            return [{"type": "text-end", "id": str(index)}]
        if block["type"] == "reasoning":
            return [{"type": "reasoning-end", "id": str(index)}]
        if block["type"] == "result":
            content = block["content"]
            result: ToolResultPart = {
                "type": "tool-result",
                "toolCallId": block["id"],
                "toolName": self._server_tool_name(block["id"]),
                "result": content[0].get("json", content[0]) if len(content) == 1 else content,
                "providerExecuted": True,
            }
            if block["status"] == "error":
                result["isError"] = True
            return [result]
        call: ToolCallPart = {
            "type": "tool-call",
            "toolCallId": block["id"],
            "toolName": block["name"],
            "input": block["input"] or "{}",
        }
        if block["server"]:
            call["providerExecuted"] = True
            self.metadata.setdefault("serverTools", {})[block["id"]] = block["name"]
        return [{"type": "tool-input-end", "id": block["id"]}, call]

    def _server_tool_name(self, call_id: str) -> str:
        return str(self.metadata.get("serverTools", {}).get(call_id, "server_tool"))

    def finish(self) -> list[StreamPart]:
        out: list[StreamPart] = []
        for index in sorted(self.blocks):  # blocks left open by a truncated stream
            out.extend(self._stop(index))
        self.metadata.pop("serverTools", None)
        finish: dict[str, Any] = {
            "type": "finish",
            "finishReason": "error" if self.errored else self.finish_reason,
            "usage": self.usage,
        }
        if self.metadata:
            finish["providerMetadata"] = {"bedrock": self.metadata}
        out.append(finish)  # type: ignore[arg-type]
        return out


class BedrockModel(_HTTPStreamingModel):
    """An Amazon Bedrock model through the Converse API (``ConverseStream``).

    **Parameters:** `model_id` (``"us.amazon.nova-micro-v1:0"``, an inference profile or model ARN);
    `region` (default ``AWS_REGION``); `base_url` (default ``https://bedrock-runtime.{region}.amazonaws.com``);
    `api_key` (a Bedrock API key, sent as ``Authorization: Bearer``; else the request is signed with
    SigV4); `access_key_id` / `secret_access_key` / `session_token` (else botocore's credential
    chain: environment, shared config and credentials files, SSO, container and instance roles);
    plus the shared transport settings. Provider options under ``"bedrock"``:
    ``additionalModelRequestFields`` (``reasoningConfig``, ``thinking``…), ``guardrailConfig``,
    ``performanceConfig``, and ``reasoningConfig`` (merged into the additional fields).
    """

    def __init__(
        self,
        model_id: str,
        *,
        region: str,
        base_url: str | None = None,
        api_key: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        provider: str = "bedrock",
        **transport: Unpack[TransportOptions],
    ) -> None:
        super().__init__(
            model_id,
            provider=provider,
            base_url=base_url or f"https://bedrock-runtime.{region}.amazonaws.com",
            api_key=api_key,
            **transport,
        )
        self.region = region
        self._url = f"{self.base_url}/model/{quote(model_id, safe='')}/converse-stream"
        self._botocore = _botocore()
        self._credentials: Any = None
        if api_key is None:
            if access_key_id and secret_access_key:
                self._credentials = self._botocore.credentials.Credentials(
                    access_key_id, secret_access_key, session_token
                )
            else:
                self._credentials = self._botocore.session.get_session().get_credentials()
            if self._credentials is None:
                raise MissingAPIKeyError(
                    "AWS credentials for Bedrock are missing: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                    "(or a profile), AWS_BEARER_TOKEN_BEDROCK, or pass api_key=..."
                )

    def _auth_headers(self) -> dict[str, str]:
        headers = {"accept": "application/vnd.amazon.eventstream"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    def _sign(self, method: str, url: str, headers: dict[str, str], content: bytes | None) -> dict[str, str]:
        if self._credentials is None:
            return headers
        botocore = self._botocore
        request = botocore.awsrequest.AWSRequest(method=method, url=url, data=content, headers=headers)
        botocore.auth.SigV4Auth(self._credentials.get_frozen_credentials(), "bedrock", self.region).add_auth(
            request
        )
        return {k: str(v) for k, v in request.headers.items()}

    async def _read_events(self, response: httpx.Response) -> AsyncIterator[object]:
        """The event stream's frames as (event type, JSON payload); exceptions as ``exception:<type>``."""
        buffer = self._botocore.eventstream.EventStreamBuffer()
        url = str(response.request.url)
        try:
            async for data in response.aiter_bytes():
                buffer.add_data(data)
                for message in buffer:
                    headers = message.headers
                    kind = headers.get(":message-type")
                    name = (
                        headers.get(":event-type")
                        if kind == "event"
                        else f"exception:{headers.get(':exception-type')}"
                    )
                    yield name, message.payload.decode("utf-8")
        except self._botocore.eventstream.ParserError as exc:
            yield self._error(
                f"invalid AWS event stream: {exc}",
                url,
                status=response.status_code,
                retryable=False,
                cause=exc,
            )
        except httpx.TimeoutException as exc:
            yield self._error(f"stream read timed out: {type(exc).__name__}", url, retryable=True, cause=exc)
        except httpx.TransportError as exc:
            yield self._error(
                f"connection lost mid-stream: {exc or type(exc).__name__}", url, retryable=True, cause=exc
            )

    def _request(self, options: CallOptions) -> tuple[str, str, dict[str, Any] | None, list[dict[str, Any]]]:
        warnings: list[dict[str, Any]] = []
        system, messages = convert_to_bedrock_messages(options.get("prompt") or [])
        body: dict[str, Any] = {"messages": messages, "system": system}
        body["inferenceConfig"] = call_settings(options, _SETTINGS, warnings)
        opts = dict((options.get("provider_options") or {}).get("bedrock") or {})
        extra = dict(opts.pop("additionalModelRequestFields", None) or {})
        if options.get("top_k") is not None:
            extra["top_k"] = options.get("top_k")
        if opts.get("reasoningConfig") is not None:
            extra["reasoningConfig"] = opts.pop("reasoningConfig")
        if extra:
            body["additionalModelRequestFields"] = extra
        tool_config = bedrock_tool_config(
            list(options.get("tools") or []), options.get("tool_choice"), warnings
        )
        if tool_config is not None:
            body["toolConfig"] = tool_config
        fmt = options.get("response_format") or {}
        if fmt.get("type") == "json" and fmt.get("schema") is not None:
            schema = {
                "name": fmt.get("name") or "response",
                "schema": msgspec.json.encode(fmt["schema"]).decode(),
            }
            if fmt.get("description"):
                schema["description"] = str(fmt["description"])
            body["outputConfig"] = {
                "textFormat": {"type": "json_schema", "structure": {"jsonSchema": schema}}
            }
        for key in ("guardrailConfig", "performanceConfig"):
            if opts.get(key) is not None:
                body[key] = opts[key]
        return "POST", self._url, body, warnings

    def _transformer(self, options: CallOptions) -> _Transformer:
        return _BedrockTransformer(self)
