"""The thread routes Studio's chat uses (Mastra's "signals" API): the page follows a memory thread
(``threads/subscribe``) and posts to it, and the answer reaches it over the subscription.

* ``send-message`` / ``queue-message`` (``{message: {contents, metadata?}, resourceId, threadId,
  ifIdle?: {streamOptions}}``) and ``signals`` (``{signal: {type: "user-message", contents}, …}``)
  start a run of the agent on the thread: at once when the thread is idle, after its active run
  otherwise (we do not inject a message into a running model call: a message to a busy thread
  waits its turn, as ``queue-message`` does in Mastra). The answer is ``{accepted: true, runId,
  signal}``; the run's chunks go to the thread's subscribers, the first followed by Mastra's
  ``data-user-message`` chunk carrying the message (stored in the thread under the signal's id).
* ``send-tool-approval`` (``{resourceId, threadId, toolCallId, approved}``): the thread's run
  waiting for that approval goes on, its chunks to the subscribers.
* ``threads/abort`` (``{threadId, expectedRunId?}``): stops the thread's active run, ``{aborted}``.

Every route checks the thread like the run routes (`memory_option`: the caller's resource, 403
for another's thread); an approval also needs the run's owner (`check_run`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from ..ai_sdk import SSEStreamResponse
from ..chunks import chunk_to_dict
from ._agent_runs import leg_options
from ._http import ApiError, api_route, cors_headers, json_answer, read_object
from ._owners import bind_run, check_run, memory_option
from ._providers import check_model_choice
from ._tools import find_agent

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.routing import BaseRoute

    from .._abort import AbortController
    from ..agent import Agent
    from ..stream import ModelOutput
    from ._context import ApiContext

__all__ = ["routes"]

_SUSPENDING = frozenset({"tool-call-approval", "tool-call-suspended"})


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def _thread(
    context: ApiContext, agent: Agent, body: Mapping[str, Any], principal: object
) -> tuple[str, str]:
    """``(thread id, resource id)`` of the body, checked for the caller (`memory_option`)."""
    thread_id, resource = body.get("threadId"), body.get("resourceId")
    if not isinstance(thread_id, str) or not thread_id:
        raise ApiError("threadId is required")
    if not isinstance(resource, str) and context.guard.auth is None:
        raise ApiError("resourceId and threadId are required when runId is not provided")
    memory = await memory_option(
        context, agent, {"memory": {"thread": thread_id, "resource": resource}}, principal
    )
    assert memory is not None
    return thread_id, str(memory["resource"])


def _idle_options(agent: Agent, body: Mapping[str, Any]) -> dict[str, Any]:
    idle = body.get("ifIdle")
    stream_options = idle.get("streamOptions") if isinstance(idle, Mapping) else None
    if not isinstance(stream_options, Mapping):
        return {}
    check_model_choice(agent, stream_options)  # Studio's composer picker names the model here
    return leg_options(stream_options)


def _publish_run(
    context: ApiContext,
    key: tuple[str, str],
    output: ModelOutput,
    principal: object,
    first: list[dict[str, Any]],
) -> Any:
    """The body of a thread run: its chunks to the subscribers (``first`` after the first chunk)."""

    async def body() -> None:
        sent_first = False
        async for chunk in output.full_stream:
            data = chunk_to_dict(chunk)
            if data.get("type") in _SUSPENDING and isinstance(data.get("runId"), str):
                await bind_run(context, data["runId"], principal)
            context.threads.publish(*key, data)
            if not sent_first:
                sent_first = True
                for extra in first:
                    context.threads.publish(*key, extra)

    return body


def routes(context: ApiContext) -> list[BaseRoute]:
    """subscribe, send-message, queue-message, signals, send-tool-approval, threads/abort."""

    async def agent_and_body(request: Request) -> tuple[Agent, dict[str, Any]]:
        _, agent = find_agent(context, request.path_params["agent_id"])
        return agent, await read_object(context, request)

    async def subscribe(request: Request, principal: object) -> Response:
        agent, body = await agent_and_body(request)
        thread_id = body.get("threadId")
        if not isinstance(thread_id, str) or not thread_id:
            raise ApiError("threadId is required")
        if body.get("resourceId") is not None or context.guard.auth is not None:
            await _thread(context, agent, body, principal)  # another's thread: 403
        follow = context.threads.follow(agent.id, thread_id)
        return SSEStreamResponse(follow, heartbeat_ms=25_000, headers=cors_headers(context.guard, request))

    async def start_message(
        request: Request, principal: object, agent: Agent, body: Mapping[str, Any], contents: Any, extra: Any
    ) -> Response:
        thread_id, resource = await _thread(context, agent, body, principal)
        if not isinstance(contents, str) or not contents:
            raise ApiError("message.contents: expected the message's text (a non-empty string)")
        run_id = str(uuid.uuid4())
        signal = {
            "contents": contents,
            **({"metadata": extra} if isinstance(extra, Mapping) else {}),
            "type": "user",
            "tagName": "user",
            "id": str(uuid.uuid4()),
            "acceptedAt": _now(),
            "createdAt": _now(),
            "__isCreatedSignal": True,  # Mastra's mark of a signal this call created
        }
        options = _idle_options(agent, body)
        options["memory"] = {"thread": thread_id, "resource": resource}
        key = (agent.id, thread_id)
        user_chunk = {"type": "data-user-message", "data": signal, "transient": True, "runId": run_id}

        async def run(controller: AbortController) -> None:
            # stored under the signal's id, as Mastra stores a signal: Studio's pending message
            # becomes that id on the data-user-message chunk, so the thread's copy is the same one
            message = {"id": signal["id"], "role": "user", "content": contents}
            output = agent.stream(
                [message], abort_signal=controller.signal, run_id=run_id, until_idle=False, **options
            )
            await _publish_run(context, key, output, principal, [user_chunk])()

        context.threads.start(key, run_id, run)
        return json_answer(context, request, {"accepted": True, "runId": run_id, "signal": signal})

    async def send_message(request: Request, principal: object) -> Response:
        agent, body = await agent_and_body(request)
        message = body.get("message")
        if isinstance(message, str):
            message = {"contents": message}
        if not isinstance(message, Mapping):
            raise ApiError("message: expected {contents, metadata?}")
        return await start_message(
            request, principal, agent, body, message.get("contents"), message.get("metadata")
        )

    async def send_signal(request: Request, principal: object) -> Response:
        agent, body = await agent_and_body(request)
        signal = body.get("signal")
        if not isinstance(signal, Mapping) or signal.get("type") not in ("user-message", "user"):
            raise ApiError("signal: only user messages ({type: 'user-message', contents}) are taken")
        return await start_message(
            request, principal, agent, body, signal.get("contents"), signal.get("metadata")
        )

    async def send_tool_approval(request: Request, principal: object) -> Response:
        agent, body = await agent_and_body(request)
        thread_id, resource = await _thread(context, agent, body, principal)
        call_id, approved = body.get("toolCallId"), body.get("approved")
        if not isinstance(call_id, str) or not call_id:
            raise ApiError("Tool call id is required")
        if not isinstance(approved, bool):
            raise ApiError("approved: expected true or false")
        pending = await agent.suspended_run(thread_id=thread_id)
        if pending is None or pending.get("toolCallId") != call_id:
            raise ApiError(f"no run of this thread waits for tool call {call_id[:80]!r}", 404)
        run_id = await check_run(context, pending["runId"], principal)
        options = {**_idle_options(agent, {"ifIdle": {"streamOptions": body.get("streamOptions")}})}
        options["memory"] = {"thread": thread_id, "resource": resource}
        key = (agent.id, thread_id)

        async def run(controller: AbortController) -> None:
            signal = controller.signal
            if approved:
                output = agent.approve_tool_call(
                    run_id=run_id, tool_call_id=call_id, abort_signal=signal, **options
                )
            else:
                output = agent.decline_tool_call(
                    run_id=run_id, tool_call_id=call_id, abort_signal=signal, **options
                )
            await _publish_run(context, key, output, principal, [])()

        context.threads.start(key, run_id, run)
        return json_answer(context, request, {"accepted": True, "runId": run_id, "toolCallId": call_id})

    async def abort(request: Request, principal: object) -> Response:
        agent, body = await agent_and_body(request)
        thread_id = body.get("threadId")
        if not isinstance(thread_id, str) or not thread_id:
            raise ApiError("threadId is required")
        if body.get("resourceId") is not None or context.guard.auth is not None:
            await _thread(context, agent, body, principal)
        expected = body.get("expectedRunId") if isinstance(body.get("expectedRunId"), str) else None
        return json_answer(
            context, request, {"aborted": context.threads.abort((agent.id, thread_id), expected)}
        )

    base = "/agents/{agent_id}"
    table: list[tuple[str, Any]] = [
        ("/threads/subscribe", subscribe),
        ("/send-message", send_message),
        ("/queue-message", send_message),
        ("/signals", send_signal),
        ("/send-tool-approval", send_tool_approval),
        ("/threads/abort", abort),
    ]
    return [
        api_route(context, base + path, handler, ["POST"], f"mastra agent {path[1:]}")
        for path, handler in table
    ]
