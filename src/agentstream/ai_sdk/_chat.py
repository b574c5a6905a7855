"""``handle_chat_stream``: one ``useChat`` request against a registered agent (``@mastra/ai-sdk`` §9.1)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from .._abort import AbortSignal
from ..stream._smooth import check_transform_factories
from ._convert import MessageMetadataFn, OnErrorFn, TransformFactory, UIChunk, Version, to_ai_sdk_stream
from ._errors import UIMessageError, default_error_text
from ._messages import ChatRequest, convert_ui_messages, parse_chat_request

__all__ = ["ChatRequestError", "check_transform_factories", "handle_chat_stream"]


class ChatRequestError(ValueError):
    """A chat request that cannot be served: malformed body (400) or unknown agent (404).

    ``status_code`` is the HTTP status to answer with and :meth:`to_dict` the JSON body.
    """

    def __init__(self, message: str, *, status_code: int = 400, path: str | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.path = path

    def to_dict(self) -> dict[str, Any]:
        """The JSON error body: `{"error": {"name": "ChatRequestError", "message": ..., "path"?: ...}}`."""
        error: dict[str, Any] = {"name": "ChatRequestError", "message": str(self)}
        if self.path is not None:
            error["path"] = self.path
        return {"error": error}


def _request(params: Any) -> ChatRequest:
    if isinstance(params, ChatRequest):
        return params
    try:
        return parse_chat_request(params)
    except UIMessageError as exc:
        raise ChatRequestError(str(exc), path=exc.path) from None


async def _guarded(
    stream: AsyncIterator[UIChunk], output: Any, on_error: OnErrorFn | None
) -> AsyncIterator[UIChunk]:
    """The UI stream; a failure becomes an ``error`` chunk (``createUIMessageStream``), and closing
    this stream early stops the agent run."""
    try:
        async for part in stream:
            yield part
    except Exception as exc:
        yield {"type": "error", "errorText": (on_error or default_error_text)(exc)}
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
        aclose = getattr(output, "aclose", None)
        if aclose is not None:
            await aclose()


async def handle_chat_stream(
    *,
    mastra: Any,
    agent_id: str,
    params: Any,
    default_options: Mapping[str, Any] | None = None,
    experimental_transform: TransformFactory | Sequence[TransformFactory] | None = None,
    version: Version = "v5",
    send_start: bool = True,
    send_finish: bool = True,
    send_reasoning: bool = False,
    send_sources: bool = False,
    on_error: OnErrorFn | None = None,
    message_metadata: MessageMetadataFn | None = None,
    abort_signal: AbortSignal | None = None,
) -> AsyncIterator[UIChunk]:
    """Run agent ``agent_id`` on a ``useChat`` request and return its UI message stream.

    ``params`` is the request body (dict, JSON bytes/str or :class:`ChatRequest`). Raises
    :class:`ChatRequestError` *before* streaming for a malformed body or an unknown agent. The UI
    messages are converted to model messages; ``trigger="regenerate-message"`` drops a trailing
    assistant message; a trailing assistant message otherwise is continued (its id becomes the
    ``start`` message id). ``default_options`` are agent options under the request's; the
    ``experimental_transform`` (or the one in ``default_options``) reshapes the chunks before
    conversion. ``abort_signal`` aborts the run; closing the returned stream stops it too.
    """
    request = _request(params)
    try:
        agent = mastra.get_agent(agent_id)
    except (KeyError, LookupError) as exc:
        raise ChatRequestError(f"Agent {agent_id} not found", status_code=404) from exc
    extra = request.model_extra or {}
    if extra.get("resumeData") is not None:
        if not extra.get("runId"):
            raise ChatRequestError("runId is required when resumeData is provided", path="runId")
        raise ChatRequestError("resuming a suspended run (resumeData) is not supported", path="resumeData")

    messages = list(request.messages)
    last = messages[-1] if messages else None
    last_message_id: str | None = None
    if isinstance(last, Mapping) and last.get("role") == "assistant":
        if request.trigger == "regenerate-message":
            messages = messages[:-1]
        elif isinstance(last.get("id"), str):
            last_message_id = last["id"]
    try:
        model_messages = convert_ui_messages(messages)
    except UIMessageError as exc:
        raise ChatRequestError(str(exc), path=exc.path) from None
    if not model_messages:
        raise ChatRequestError("the request has no message to answer", path="messages")

    defaults = dict(default_options or {})
    transform = experimental_transform or defaults.pop("experimental_transform", None)
    defaults.pop("experimental_transform", None)
    check_transform_factories(transform, "handle_chat_stream(experimental_transform=...)")
    options: dict[str, Any] = {**defaults}
    if isinstance(extra.get("runId"), str):
        options["run_id"] = extra["runId"]
    if abort_signal is not None:
        options["abort_signal"] = abort_signal
    output = agent.stream(model_messages, **options)
    stream = to_ai_sdk_stream(
        output,
        version=version,
        send_start=send_start,
        send_finish=send_finish,
        send_reasoning=send_reasoning,
        send_sources=send_sources,
        last_message_id=last_message_id,
        message_metadata=message_metadata,
        on_error=on_error,
        experimental_transform=transform,
    )
    return _guarded(stream, output, on_error)
