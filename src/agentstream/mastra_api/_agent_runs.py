"""The agents' run routes, as ``@mastra/server`` defines them:

* ``POST /api/agents/:agentId/stream`` (and ``stream-until-idle``): the run's ``fullStream`` as SSE,
  ``data: <Mastra ChunkType JSON>`` per chunk then ``data: [DONE]`` (what client-js's
  ``processDataStream`` reads); ``generate``: the whole output as JSON.
* ``approve-tool-call`` / ``decline-tool-call`` (stream) and ``-generate`` (JSON): continue a run
  waiting for approval (``{runId, toolCallId}``); ``resume-stream``: resume a suspended tool
  (``{runId, resumeData, toolCallId?}``).

The body's options are Mastra's, camelCase: ``messages``, ``memory: {thread, resource}`` (checked
by `memory_option`), ``runId``, ``maxSteps``, ``toolChoice``, ``activeTools``, ``modelSettings``,
``structuredOutput: {schema}``, ``requireToolApproval``. A client's ``instructions``,
``requestContext``, ``system`` messages and client tools are not taken (docs/mastra-api.md): a
caller does not rewrite the agent's rules or claim another tenant. A client that goes away stops
its run.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from .._abort import AbortController
from ..ai_sdk import SSEStreamResponse
from ..chunks import chunk_to_dict, to_jsonable
from ._http import ApiError, api_route, cors_headers, json_answer, read_object
from ._owners import bind_run, check_new_run, check_run, memory_option
from ._providers import check_model_choice
from ._tools import find_agent

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.routing import BaseRoute

    from ..agent import Agent
    from ..stream import FullOutput, ModelOutput
    from ._context import ApiContext

__all__ = ["full_output_json", "leg_options", "routes"]

log = logging.getLogger("agentstream.mastra_api")

_MODEL_SETTINGS = frozenset(
    {"temperature", "topP", "topK", "maxOutputTokens", "maxTokens", "stopSequences", "seed"}
    | {"presencePenalty", "frequencyPenalty"}
)
_SUSPENDING = frozenset({"tool-call-approval", "tool-call-suspended"})
_FAILED = "the agent run failed (details are in the server log)"


def _message(message: Any, index: int) -> Any:
    if isinstance(message, str):
        return message
    if not isinstance(message, Mapping):
        raise ApiError(
            f"messages[{index}]: expected a message object or a string, got {type(message).__name__}"
        )
    role = message.get("role")
    if role not in ("user", "assistant", "tool"):
        raise ApiError(f"messages[{index}].role: expected 'user', 'assistant' or 'tool', got {role!r}")
    if "content" not in message and isinstance(message.get("parts"), list):
        # A UI message (Studio's): its text parts are the content.
        texts = [
            p.get("text", "") for p in message["parts"] if isinstance(p, Mapping) and p.get("type") == "text"
        ]
        return {"role": role, "content": "".join(texts)}
    return dict(message)


def _messages(body: Mapping[str, Any]) -> Any:
    messages = body.get("messages")
    if isinstance(messages, str):
        return messages
    if isinstance(messages, Mapping):
        return [_message(messages, 0)]
    if isinstance(messages, list) and messages:
        return [_message(m, i) for i, m in enumerate(messages)]
    raise ApiError("messages: required, a string or a non-empty list of messages")


def leg_options(body: Mapping[str, Any]) -> dict[str, Any]:
    """The options a leg (a first run or a resumed one) takes from the body (Mastra's camelCase)."""
    options: dict[str, Any] = {}
    if "maxSteps" in body:
        steps = body["maxSteps"]
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ApiError(f"maxSteps: expected a positive integer, got {steps!r}")
        options["max_steps"] = steps
    if isinstance(body.get("toolChoice"), (str, Mapping)):
        options["tool_choice"] = body["toolChoice"]
    if isinstance(body.get("activeTools"), list):
        options["active_tools"] = [str(t) for t in body["activeTools"]]
    settings = body.get("modelSettings")
    if isinstance(settings, Mapping):
        # Sampling settings only: headers and provider options stay the server's (a client does
        # not steer the provider call), and Mastra's own (maxRetries, ...) have no meaning here.
        options["model_settings"] = {k: v for k, v in settings.items() if k in _MODEL_SETTINGS}
    if isinstance(body.get("requireToolApproval"), bool):
        options["require_tool_approval"] = body["requireToolApproval"]
    output = body.get("structuredOutput")
    if isinstance(output, Mapping) and isinstance(output.get("schema"), Mapping):
        options["structured_output"] = {"schema": dict(output["schema"])}
    return options


def _until_idle(value: Any) -> bool | dict[str, Any]:
    """The body's ``untilIdle`` (Studio sends ``true``): ``True``, ``{"max_idle_ms": n}`` or off."""
    if isinstance(value, Mapping):
        idle = value.get("maxIdleMs")
        if isinstance(idle, (int, float)) and not isinstance(idle, bool) and idle > 0:
            return {"max_idle_ms": idle}
        return True
    return value is True


async def _run_options(
    context: ApiContext, agent: Agent, body: Mapping[str, Any], principal: object
) -> dict[str, Any]:
    check_model_choice(agent, body)
    options = leg_options(body)
    memory = await memory_option(context, agent, body, principal)
    if memory is not None:
        options["memory"] = memory
    run_id = await check_new_run(context, body.get("runId"), principal)
    if run_id is not None:
        options["run_id"] = run_id
    return options


async def _chunks(
    context: ApiContext, output: ModelOutput, principal: object, thread: tuple[str, str] | None
) -> AsyncIterator[Any]:
    """The run's chunks as Mastra's JSON, also to the thread's subscribers (``thread``: the agent's
    id and the memory thread); a run that suspends is bound to the caller first."""
    run_id = ""
    try:
        async for chunk in output.full_stream:
            data = chunk_to_dict(chunk)
            run_id = str(data.get("runId") or run_id)
            if data.get("type") in _SUSPENDING and run_id:
                await bind_run(context, run_id, principal)
            if thread is not None:
                context.threads.publish(*thread, data)
            yield data
    except Exception:
        log.exception("agent run %s failed while streaming", run_id)
        error = {"message": _FAILED, "name": "Error"}
        yield {"type": "error", "runId": run_id, "from": "AGENT", "payload": {"error": error}}


def _thread_of(agent: Agent, options: Mapping[str, Any]) -> tuple[str, str] | None:
    memory = options.get("memory")
    if not isinstance(memory, Mapping):
        return None
    thread = memory.get("thread")
    thread_id = thread.get("id") if isinstance(thread, Mapping) else thread
    return (agent.id, thread_id) if isinstance(thread_id, str) else None


def _answer(
    context: ApiContext, request: Request, start: Any, principal: object, thread: tuple[str, str] | None
) -> Response:
    """``start(abort_signal)`` → a `ModelOutput`, streamed as SSE; a bad option is a 400."""
    controller = AbortController()
    try:
        output = start(controller.signal)
    except (TypeError, ValueError) as exc:
        raise ApiError(str(exc)) from None
    headers = cors_headers(context.guard, request)
    chunks = _chunks(context, output, principal, thread)
    return SSEStreamResponse(chunks, controller=controller, headers=headers)


def full_output_json(full: FullOutput) -> dict[str, Any]:
    """``generate``'s answer: the output as Mastra's JSON (camelCase, absent rather than null)."""
    out: dict[str, Any] = {
        "text": full.text,
        "usage": to_jsonable(full.usage),
        "steps": [step.to_wire() for step in full.steps],
        "finishReason": full.finish_reason,
        "warnings": to_jsonable(full.warnings),
        "request": to_jsonable(full.request),
        "reasoning": to_jsonable(full.reasoning),
        "reasoningText": full.reasoning_text,
        "toolCalls": to_jsonable(full.tool_calls),
        "toolResults": to_jsonable(full.tool_results),
        "sources": to_jsonable(full.sources),
        "files": to_jsonable(full.files),
        "response": to_jsonable(full.response),
        "totalUsage": to_jsonable(full.total_usage),
        "usedFallbackValue": full.used_fallback_value,
        "runId": full.run_id,
        "object": to_jsonable(full.object),
        "providerMetadata": to_jsonable(full.provider_metadata),
        "tripwire": full.tripwire.to_dict() if full.tripwire is not None else None,
        "suspendPayload": to_jsonable(full.suspend_payload),
        "resumeSchema": full.resume_schema,
    }
    return {k: v for k, v in out.items() if v is not None}


async def _generated(
    context: ApiContext, request: Request, output: ModelOutput, principal: object
) -> Response:
    try:
        full = await output.get_full_output()
    except Exception:
        log.exception("agent generate failed")
        raise ApiError(_FAILED, 500) from None
    if full.finish_reason == "suspended" and full.run_id:
        await bind_run(context, full.run_id, principal)
    return json_answer(context, request, full_output_json(full))


def routes(context: ApiContext) -> list[BaseRoute]:
    """stream, stream-until-idle, generate, approve / decline (stream and generate), resume-stream."""

    async def agent_and_body(request: Request) -> tuple[Agent, dict[str, Any]]:
        _, agent = find_agent(context, request.path_params["agent_id"])
        return agent, await read_object(context, request)

    def streaming(until_idle: bool) -> Any:
        async def handler(request: Request, principal: object) -> Response:
            agent, body = await agent_and_body(request)
            messages = _messages(body)
            options = await _run_options(context, agent, body, principal)
            options["until_idle"] = _until_idle(body.get("untilIdle")) or until_idle
            return _answer(
                context,
                request,
                lambda signal: agent.stream(messages, abort_signal=signal, **options),
                principal,
                _thread_of(agent, options),
            )

        return handler

    async def generate(request: Request, principal: object) -> Response:
        agent, body = await agent_and_body(request)
        messages = _messages(body)
        options = await _run_options(context, agent, body, principal)
        controller = AbortController()
        try:
            # generate() is stream() read to its end; the stream keeps the run's suspension visible
            output = agent.stream(messages, abort_signal=controller.signal, until_idle=False, **options)
        except (TypeError, ValueError) as exc:
            raise ApiError(str(exc)) from None
        return await _generated(context, request, output, principal)

    def decision(kind: str, generate_: bool) -> Any:
        async def handler(request: Request, principal: object) -> Response:
            agent, body = await agent_and_body(request)
            run_id = await check_run(context, body.get("runId"), principal)
            call_id = body.get("toolCallId")
            if kind != "resume" and (not isinstance(call_id, str) or not call_id):
                raise ApiError("Tool call id is required")
            options = leg_options(body)
            memory = await memory_option(context, agent, body, principal)
            if memory is not None:
                options["memory"] = memory
            tool_call_id = call_id if isinstance(call_id, str) and call_id else None

            def start(signal: Any) -> ModelOutput:
                if kind == "approve":
                    return agent.approve_tool_call(
                        run_id=run_id, tool_call_id=tool_call_id, abort_signal=signal, **options
                    )
                if kind == "decline":
                    reason = body.get("reason") if isinstance(body.get("reason"), str) else None
                    return agent.decline_tool_call(
                        run_id=run_id,
                        tool_call_id=tool_call_id,
                        reason=reason,
                        abort_signal=signal,
                        **options,
                    )
                if "resumeData" not in body:
                    raise ValueError("resumeData: required (what the suspended tool resumes with)")
                return agent.resume_stream(
                    body["resumeData"],
                    run_id=run_id,
                    tool_call_id=tool_call_id,
                    abort_signal=signal,
                    **options,
                )

            if not generate_:
                return _answer(context, request, start, principal, _thread_of(agent, options))
            try:
                output = start(AbortController().signal)
            except (TypeError, ValueError) as exc:
                raise ApiError(str(exc)) from None
            return await _generated(context, request, output, principal)

        return handler

    base = "/agents/{agent_id}"
    table: list[tuple[str, Any]] = [
        ("/stream", streaming(False)),
        ("/stream-until-idle", streaming(True)),
        ("/generate", generate),
        ("/approve-tool-call", decision("approve", False)),
        ("/decline-tool-call", decision("decline", False)),
        ("/approve-tool-call-generate", decision("approve", True)),
        ("/decline-tool-call-generate", decision("decline", True)),
        ("/resume-stream", decision("resume", False)),
    ]
    return [
        api_route(context, base + path, handler, ["POST"], f"mastra agent {path[1:]}")
        for path, handler in table
    ]
