"""``handle_chat_stream``: one ``useChat`` request against a registered agent (``@mastra/ai-sdk`` §9.1)."""

from __future__ import annotations

import re
from array import array
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Protocol

import msgspec

from .._abort import AbortSignal
from ..chunks import loads_wellformed
from ..stream import TransformFactory, check_transform_factories
from ._convert import MessageMetadataFn, OnErrorFn, UIChunk, Version, to_ai_sdk_stream
from ._errors import ChatRequestError, UIMessageError, default_error_text
from ._errors import _clip as _clip  # re-exported: _workflow imports it from here
from ._memory_option import request_memory
from ._messages import ChatRequest, convert_ui_messages, parse_chat_request
from ._resume import (
    ResumeTarget,
    RunOwners,
    approval_targets,
    body_target,
    stream_resumed,
    suspended_run_id,
)

__all__ = [
    "MAX_ID_LENGTH",
    "AgentRegistry",
    "ChatRequestError",
    "check_chat_request",
    "handle_chat_stream",
    "parse_json_body",
]

MAX_ID_LENGTH = 256
"""Longest ``id``/``messageId``/``runId``/message id a request may carry (longer ones are refused)."""


class AgentRegistry(Protocol):
    """What `handle_chat_stream` needs of a ``Mastra``: agents by id (``KeyError`` if unknown)."""

    def get_agent(self, key: str) -> Any:
        """The agent registered under ``key``; raises ``KeyError`` (or ``LookupError``) if none is."""
        ...


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
# Brackets as signed bytes: opening +1, closing -1 (0xFF), so a running sum is the nesting depth.
_BRACKETS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[{]}")))
_NOT_JSON_NUMBERS = (b"NaN", b"Infinity", b"-Infinity")


def _nesting(raw: bytes, limit: int) -> bool:
    """Whether ``raw`` nests arrays/objects deeper than ``limit`` (brackets inside strings ignored)."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    depths = array("b")
    depths.frombytes(_STRING.sub(b"", raw).translate(_BRACKETS, _NOT_BRACKETS))
    return max(accumulate(depths), default=0) > limit


def _decode_problem(raw: bytes, exc: msgspec.DecodeError) -> str:
    match = re.search(r"\(byte (\d+)\)", str(exc))
    if match is not None:
        at = int(match.group(1))
        for word in _NOT_JSON_NUMBERS:
            if raw.startswith(word, at):
                return f"the request body is not valid JSON: {word.decode()} at byte {at} (numbers must be finite)"
    if "out of range" in str(exc):
        return f"the request body is not valid JSON: a number is out of range ({exc})"
    return f"the request body is not valid JSON ({exc})"


def parse_json_body(raw: bytes | bytearray | memoryview | str, *, max_depth: int = 64) -> Any:
    """Decode a request body as strict JSON; raises `ChatRequestError` (400) naming the problem.

    Refuses ``NaN``/``Infinity`` and out-of-range numbers (not JSON) and nesting deeper than
    ``max_depth`` arrays/objects (checked before decoding, so a 100k-deep body costs a scan, not a
    ``RecursionError``).
    """
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    if _nesting(data, max_depth):
        raise ChatRequestError(f"the request body nests arrays/objects deeper than {max_depth} levels")
    try:
        # JSON.stringify spells a lone surrogate (an answer's delta cut inside an emoji, sent back
        # with the history) as an escape msgspec alone refuses.
        return loads_wellformed(data)
    except msgspec.DecodeError as exc:
        raise ChatRequestError(_decode_problem(data, exc)) from None
    except RecursionError:  # unreachable below max_depth, kept so it can never become a 500
        raise ChatRequestError(f"the request body nests deeper than {max_depth} levels") from None


def _check_ids(request: ChatRequest) -> None:
    extra = request.model_extra or {}
    named = {"id": request.id, "messageId": request.message_id, "runId": extra.get("runId")}
    named.update({f"messages[{i}].id": m.get("id") for i, m in enumerate(request.messages)})
    for path, value in named.items():
        if isinstance(value, str) and len(value) > MAX_ID_LENGTH:
            raise ChatRequestError(
                f"{path}: expected an id of at most {MAX_ID_LENGTH} characters, got {len(value)}", path=path
            )


def _check_roles(request: ChatRequest) -> None:
    for i, message in enumerate(request.messages):
        if message.get("role") == "system":
            raise ChatRequestError(
                f"messages[{i}].role: system messages from the client are refused (the agent's "
                "instructions are the system prompt); allow them with allow_system_messages=True",
                path=f"messages[{i}].role",
            )


def _request(params: Any, *, allow_system_messages: bool, max_json_depth: int) -> ChatRequest:
    if isinstance(params, ChatRequest):
        request = params
    else:
        if isinstance(params, (bytes, bytearray, memoryview, str)):
            params = parse_json_body(params, max_depth=max_json_depth)
        try:
            request = parse_chat_request(params)
        except UIMessageError as exc:
            raise ChatRequestError(str(exc), path=exc.path) from None
    _check_ids(request)
    if not allow_system_messages:
        _check_roles(request)
    return request


async def _guarded(
    stream: AsyncIterator[UIChunk], output: Any, on_error: OnErrorFn | None, owners: RunOwners | None = None
) -> AsyncIterator[UIChunk]:
    """The UI stream; a failure becomes an ``error`` chunk (``createUIMessageStream``), and closing
    this stream early stops the agent run. A run that suspends is bound to this chat and owner
    before the client hears of it, so only they can resume it."""
    try:
        async for part in stream:
            run_id = suspended_run_id(part) if owners is not None else None
            if run_id is not None and owners is not None:
                await owners.bind(run_id)
            yield part
    except Exception as exc:
        yield {"type": "error", "errorText": (on_error or default_error_text)(exc)}
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
        aclose = getattr(output, "aclose", None)
        if aclose is not None:
            await aclose()


@dataclass(frozen=True)
class _Checked:
    """A request that passed every check `handle_chat_stream` makes before it runs anything."""

    agent: Any
    owners: RunOwners
    targets: list[ResumeTarget]
    in_body: bool
    last_message_id: str | None
    model_messages: list[Any]
    run_id: str | None
    memory: dict[str, Any] | None = None


async def _checked(
    mastra: AgentRegistry,
    agent_id: str,
    params: Any,
    version: Version,
    allow_system_messages: bool,
    max_json_depth: int,
    owner: str | None,
) -> _Checked:
    request = _request(params, allow_system_messages=allow_system_messages, max_json_depth=max_json_depth)
    try:
        agent = mastra.get_agent(agent_id)
    except (KeyError, LookupError) as exc:
        raise ChatRequestError(f"Agent {_clip(agent_id, 120)} not found", status_code=404) from exc
    extra = request.model_extra or {}
    owners = RunOwners(getattr(mastra, "storage", None), chat_id=request.id, owner=owner)
    body = body_target(extra)
    targets = [body] if body is not None else []
    if not targets and version != "v5" and request.trigger != "regenerate-message":
        targets = approval_targets(request.messages)

    messages = list(request.messages)
    last = messages[-1] if messages else None
    last_message_id: str | None = None
    if isinstance(last, Mapping) and last.get("role") == "assistant":
        if request.trigger == "regenerate-message":
            messages = messages[:-1]
        elif isinstance(last.get("id"), str):
            last_message_id = last["id"]
    if targets:
        checked_runs: set[str] = set()
        for i, target in enumerate(targets):
            path = "runId" if body is not None else f"approvals[{i}]"
            await owners.check(target.run_id, path)
            if target.run_id not in checked_runs:
                checked_runs.add(target.run_id)
                await _still_waiting(agent, target, path)
        return _Checked(agent, owners, targets, body is not None, last_message_id, [], None)
    try:
        model_messages = convert_ui_messages(messages)
    except UIMessageError as exc:
        raise ChatRequestError(str(exc), path=exc.path) from None
    if not model_messages:
        raise ChatRequestError("the request has no message to answer", path="messages")
    run_id = extra.get("runId") if isinstance(extra.get("runId"), str) else None
    if run_id is not None:
        await owners.check_new_run(run_id)
    memory = await request_memory(agent, extra.get("memory"), owner, max_id=MAX_ID_LENGTH)
    return _Checked(agent, owners, [], False, last_message_id, model_messages, run_id, memory)


async def _still_waiting(agent: Any, target: ResumeTarget, path: str) -> None:
    """Refuse (409) an answer to a run of this chat that no longer waits, before anything streams.

    Without this the refusal came as a 200 stream whose ``error`` chunk held the `ResumeError`'s
    attributes as JSON. Only the first answer to a run is compared with the call it waits for: a
    run answered for two calls suspends again on the second after the first leg.
    """
    probe = getattr(agent, "suspended_run", None)
    if probe is None:
        return
    pending = await probe(run_id=target.run_id)
    run = _clip(target.run_id, 120)
    if pending is None:
        lost_run = getattr(agent, "lost_run", None)
        lost = await lost_run(target.run_id) if lost_run is not None else None
        raise ChatRequestError(
            f"run {run!r} is not waiting for an answer any more: "
            + (
                lost
                if lost is not None
                else "it has finished or is being resumed (each suspension is answered once; send a new message to go on)"
            ),
            status_code=409,
            path=path,
        )
    waits_for = pending.get("toolCallId")
    if target.tool_call_id and isinstance(waits_for, str) and waits_for != target.tool_call_id:
        raise ChatRequestError(
            f"run {run!r} waits for an answer to tool call {_clip(waits_for, 120)!r}, "
            f"not {_clip(target.tool_call_id, 120)!r}",
            status_code=409,
            path="toolCallId" if path == "runId" else path,
        )


async def check_chat_request(
    *,
    mastra: AgentRegistry,
    agent_id: str,
    params: Mapping[str, Any] | ChatRequest | bytes | str,
    version: Version = "v5",
    allow_system_messages: bool = False,
    max_json_depth: int = 64,
    owner: str | None = None,
) -> None:
    """Make every check `handle_chat_stream` makes before it streams, without running the agent.

    Raises the same `ChatRequestError` (malformed body, unknown agent → 404, a run that is not
    this chat's to resume → 403, a run of this chat that no longer waits → 409). A server that hands the turn to a worker answers these itself.
    """
    await _checked(mastra, agent_id, params, version, allow_system_messages, max_json_depth, owner)


async def handle_chat_stream(
    *,
    mastra: AgentRegistry,
    agent_id: str,
    params: Mapping[str, Any] | ChatRequest | bytes | str,
    default_options: Mapping[str, Any] | None = None,
    experimental_transform: TransformFactory | Sequence[TransformFactory] | None = None,
    version: Version = "v5",
    send_start: bool = True,
    send_finish: bool = True,
    send_reasoning: bool = False,
    send_sources: bool = False,
    send_goals: bool = False,
    on_error: OnErrorFn | None = None,
    message_metadata: MessageMetadataFn | None = None,
    abort_signal: AbortSignal | None = None,
    allow_system_messages: bool = False,
    max_json_depth: int = 64,
    include_sub_agent_metadata: bool = False,
    owner: str | None = None,
    request_context: Mapping[str, Any] | None = None,
) -> AsyncIterator[UIChunk]:
    """Run agent ``agent_id`` on a ``useChat`` request and return its UI message stream.

    ``params`` is the request body (dict, JSON bytes/str or `ChatRequest`). Raises
    `ChatRequestError` *before* streaming for a malformed body or an unknown agent. Messages
    with ``role: "system"`` are refused unless ``allow_system_messages`` (a client must not replace
    the agent's instructions); ids longer than `MAX_ID_LENGTH` are refused; JSON bytes/str
    are decoded strictly (`parse_json_body`, ``max_json_depth``). The UI
    messages are converted to model messages; ``trigger="regenerate-message"`` drops a trailing
    assistant message; a trailing assistant message otherwise is continued (its id becomes the
    ``start`` message id). ``default_options`` are agent options under the request's; the
    ``experimental_transform`` (or the one in ``default_options``) reshapes the chunks before
    conversion. ``abort_signal`` aborts the run; closing the returned stream stops it too.
    ``include_sub_agent_metadata`` streams the progress of sub-agents run as tools
    (``data-tool-agent`` parts); off by default, as in Mastra's ``handleChatStream``. Workflows run
    as tools always stream ``data-tool-workflow`` parts, as in Mastra.

    A follow-up answers a suspended run instead of starting one: ``resumeData`` + ``runId``
    (+ ``toolCallId``) in the body, or (``version`` v6/v7) ``approval-responded`` tool parts on the
    trailing assistant message; the continuation streams into that message. Only the chat (``id``)
    and ``owner`` (the authenticated principal; `chat_route` passes it) that saw the run suspend
    may resume it; anyone else gets a 403 `ChatRequestError`.
    ``send_goals`` forwards goal progress as ``data-goal`` parts (`to_ai_sdk_stream`).
    """
    checked = await _checked(mastra, agent_id, params, version, allow_system_messages, max_json_depth, owner)
    defaults = dict(default_options or {})
    transform = experimental_transform or defaults.pop("experimental_transform", None)
    defaults.pop("experimental_transform", None)
    check_transform_factories(transform, "handle_chat_stream(experimental_transform=...)")
    options: dict[str, Any] = {**defaults}
    if abort_signal is not None:
        options["abort_signal"] = abort_signal
    if request_context is not None:
        options["request_context"] = request_context
    convert: dict[str, Any] = {
        "version": version,
        "send_start": send_start,
        "send_finish": send_finish,
        "send_reasoning": send_reasoning,
        "send_sources": send_sources,
        "send_goals": send_goals,
        "last_message_id": checked.last_message_id,
        "message_metadata": message_metadata,
        "on_error": on_error,
        "experimental_transform": transform,
        "include_sub_agent_metadata": include_sub_agent_metadata,
    }
    agent, owners = checked.agent, checked.owners
    if checked.targets:
        options.pop("run_id", None)  # a resumed run keeps its own id (a default one would clash)
        resumed = stream_resumed(agent, checked.targets, options, convert, frame=not checked.in_body)
        return _guarded(resumed, None, on_error, owners)
    if checked.run_id is not None:
        options["run_id"] = checked.run_id
    if checked.memory is not None:  # the body's, over the route's defaults (Mastra's precedence)
        options["memory"] = checked.memory
    model_messages = checked.model_messages
    output = agent.stream(model_messages, **options)
    return _guarded(to_ai_sdk_stream(output, **convert), output, on_error, owners)
