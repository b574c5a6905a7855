"""``chat_route``: a Starlette ``Route`` serving ``POST /chat/{agent_id}`` to ``useChat``.

A request passes the `RequestGuard` (host, origin, auth, content type, size, JSON depth)
before the agent runs; every refusal, and any unexpected failure before streaming starts, is
answered as JSON ``{"error": {"name", "message", "path"?}}``. The response is an
`SSEStreamResponse`: heartbeats, and a client disconnect stops the run.
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._abort import AbortController
from .._request_context import RequestContext, as_request_context
from ..ai_sdk import (
    MAX_ID_LENGTH,
    AgentRegistry,
    ChatRequestError,
    Jobs,
    MessageMetadataFn,
    OnErrorFn,
    SSEStreamResponse,
    TransformFactory,
    Version,
    assert_valid_heartbeat_ms,
    check_chat_request,
    check_transform_factories,
    end_cancelled_turn,
    handle_chat_stream,
)
from ..resumable import ChatRunner, ChatTurn, ChatTurnOptions, StreamStore, chat_stream_key
from ..tracing import incoming_trace
from ._errors import answering_errors
from ._guard import RequestGuard
from ._owner import owner_key, principal_stream_owner, stream_owner
from ._resume import check_runner, claim, route_jobs

RequestContextHook = Callable[
    [Any, object], "Mapping[str, Any] | RequestContext | Awaitable[Mapping[str, Any]]"
]
"""``(request, principal) -> mapping`` (may be async): a run's request context, built on the server."""

__all__ = ["chat_route"]

_WORKER_SETTINGS = ("default_options", "experimental_transform", "on_error", "message_metadata")
"""`chat_route`'s settings that belong to the workers when a runner answers (callables, defaults)."""


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    kinds = {str: "a string", list: "an array", int: "a number", float: "a number"}
    return kinds.get(type(value), type(value).__name__)


async def _dispatch_turn(
    jobs: Jobs,
    runner: ChatRunner,
    agent_id: str,
    body: Mapping[str, Any],
    owner: str | None,
    traceparent: str | None,
    options: ChatTurnOptions,
    context: Mapping[str, Any] | None = None,
) -> AsyncIterator[Any]:
    """Claim the chat's stream, cancel its previous turn, hand the turn to ``runner``; the answer is
    the stream, followed (`Jobs.hand_off`: the claim is released if the dispatch fails)."""
    chat_id = body.get("id")
    if not isinstance(chat_id, str) or not chat_id:
        chat_id = f"anonymous-{uuid.uuid4().hex}"  # answered, but not resumable: no chat id
    store = jobs.require_store("chat_route(runner=...)")
    previous = await store.active(chat_stream_key(chat_id))
    stream_id = await claim(jobs, chat_id, stream_owner(owner))
    turn = ChatTurn(
        agent_id=agent_id,
        body=dict(body),
        chat_id=chat_id,
        stream_id=stream_id,
        owner=owner,
        traceparent=traceparent,
        options=options,
    )
    if context:
        turn["request_context"] = _portable_context(context)

    async def dispatch() -> None:
        if previous is not None and previous.stream_id != stream_id:
            # A chat streams one answer at a time; a turn that never started is ended here.
            if not await runner.cancel(previous.stream_id):
                await end_cancelled_turn(store, previous.stream_id)
        await runner.dispatch(turn)

    return await jobs.hand_off(stream_id, dispatch())


def _portable_context(context: Mapping[str, Any]) -> dict[str, Any]:
    """The request context as the JSON a turn carries to a worker; a value that is not JSON is a
    mistake of the route's hook, named here (not a worker's failure later)."""
    out: dict[str, Any] = {}
    for key, value in context.items():
        try:
            out[str(key)] = json.loads(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"chat_route(request_context=...): request_context[{key!r}] is a {type(value).__name__}, "
                "not JSON: a turn run on a worker carries its context as JSON"
            ) from exc
    return out


async def _built_context(hook: RequestContextHook | None, request: Request, principal: object) -> Any:
    """The run's `RequestContext` from the route's hook (``None``: no hook)."""
    if hook is None:
        return None
    built = hook(request, principal)
    return as_request_context(await built if inspect.isawaitable(built) else built)


def chat_route(
    mastra: AgentRegistry,
    path: str = "/chat/{agent_id}",
    *,
    agent: str | None = None,
    default_options: Mapping[str, Any] | None = None,
    experimental_transform: TransformFactory | Sequence[TransformFactory] | None = None,
    version: Version = "v5",
    send_start: bool = True,
    send_finish: bool = True,
    send_reasoning: bool = False,
    send_sources: bool = False,
    send_goals: bool = False,
    heartbeat_ms: float = 15_000,
    on_error: OnErrorFn | None = None,
    message_metadata: MessageMetadataFn | None = None,
    name: str | None = None,
    guard: RequestGuard | None = None,
    allow_system_messages: bool = False,
    include_sub_agent_metadata: bool = False,
    stream_store: StreamStore | None = None,
    runner: ChatRunner | None = None,
    request_context: RequestContextHook | None = None,
    jobs: Jobs | None = None,
) -> Route:
    """A ``POST`` route answering ``useChat`` with agent ``{agent_id}`` (or the fixed ``agent``).

    Usable in Starlette (``Starlette(routes=[chat_route(mastra)])``) and FastAPI
    (``app.router.routes.append(chat_route(mastra))``). ``guard`` sets the request checks
    (default `RequestGuard`: loopback hosts on a loopback bind, same origin, JSON bodies up
    to 1 MiB and 64 levels); client ``system`` messages are refused unless
    ``allow_system_messages``. A W3C ``traceparent`` header makes the run's span (when traced, see
    ``agentstream.tracing``) a child of the caller's. A refused or malformed request gets 4xx JSON and an unknown agent a
    404, ``{"error": {"name", "message", "path"?}}``; everything else streams.
    ``include_sub_agent_metadata`` adds the live progress of sub-agents run as tools
    (``data-tool-agent`` parts; workflows run as tools always give ``data-tool-workflow``). With a ``stream_store`` (see
    `resume_route`), a request with a chat ``id`` is recorded there and runs to its end even if
    the client goes away, so ``useChat({resume: true})`` can pick it up again: give it as ``jobs``
    (a `Jobs` over the store, shared with `resume_route`, `stop_route`; ``stream_store``: deprecated).

    With a ``runner`` (a `ChatRunner` such as ``agentstream.durable.DurableChat``; needs a
    ``stream_store`` its workers share), the agent does not run here: the request is checked
    (every refusal is still JSON 4xx from this server), the chat's stream claimed, the turn
    dispatched as a JSON `ChatTurn`, and the answer is that stream, followed. A new answer for the
    chat cancels the previous turn. Callables (``experimental_transform``, ``on_error``,
    ``message_metadata``) and ``default_options`` then belong to the workers' configuration.

    ``request_context(request, principal)`` (may be async) builds each run's `RequestContext`
    (Mastra's ``requestContext``) on the server, from the authenticated principal and the request:
    the agent's dynamic fields and its tools read it. A client cannot send one (it would choose
    its own tenant). With a ``runner`` the context travels with the turn, as JSON (a value that is
    not JSON is a `TypeError` naming its key).
    """
    assert_valid_heartbeat_ms(heartbeat_ms)
    served = route_jobs("chat_route", jobs, stream_store)
    stream_store = served.store
    if runner is not None:
        settings = (default_options, experimental_transform, on_error, message_metadata)
        local = dict(zip(_WORKER_SETTINGS, settings, strict=True))
        check_runner("chat_route", runner, ChatRunner, stream_store, local, "DurableWorker(chat_options=...)")
    check_transform_factories(experimental_transform, "chat_route(experimental_transform=...)")
    check_transform_factories(
        (default_options or {}).get("experimental_transform"), "chat_route(default_options=...)"
    )
    if agent is None and "{agent_id}" not in path:
        raise ValueError("chat_route: the path needs an {agent_id} parameter, or pass agent=")
    checks = guard or RequestGuard()
    turn_options = ChatTurnOptions(
        version=version, send_start=send_start, send_finish=send_finish, send_reasoning=send_reasoning,
        send_sources=send_sources, send_goals=send_goals, include_sub_agent_metadata=include_sub_agent_metadata,
        allow_system_messages=allow_system_messages,
    )  # fmt: skip

    async def run(
        request: Request, body: Mapping[str, Any], controller: AbortController, principal: object
    ) -> Any:
        context = await _built_context(request_context, request, principal)
        with incoming_trace(request.headers):  # the run's span continues the caller's trace
            return await handle_chat_stream(
                mastra=mastra,
                agent_id=agent or request.path_params["agent_id"],
                params=body,
                default_options=default_options,
                experimental_transform=experimental_transform,
                version=version,
                send_start=send_start,
                send_finish=send_finish,
                send_reasoning=send_reasoning,
                send_sources=send_sources,
                send_goals=send_goals,
                on_error=on_error,
                message_metadata=message_metadata,
                abort_signal=controller.signal,
                allow_system_messages=allow_system_messages,
                include_sub_agent_metadata=include_sub_agent_metadata,
                owner=owner_key(principal),
                request_context=context,
            )

    async def start(request: Request) -> Response:
        if request.method == "OPTIONS":
            return checks.preflight(request)
        principal = await checks.admit(request)
        body = await checks.read_json(request)
        if not isinstance(body, Mapping):
            raise ChatRequestError(f"expected the request body to be a JSON object, got {_json_kind(body)}")
        controller = AbortController()
        headers = checks.cors_headers(request)
        chat_id = body.get("id")
        if runner is not None:
            answer = await dispatch(request, body, principal, runner)
            return SSEStreamResponse(answer, heartbeat_ms=heartbeat_ms, headers=headers)
        if stream_store is None or not isinstance(chat_id, str) or not 0 < len(chat_id) <= MAX_ID_LENGTH:
            stream = await run(request, body, controller, principal)
            return SSEStreamResponse(
                stream, controller=controller, heartbeat_ms=heartbeat_ms, headers=headers
            )
        stream_id = await claim(served, chat_id, principal_stream_owner(principal))
        try:
            stream = await run(request, body, controller, principal)
        except BaseException:
            await served.release(stream_id)
            raise
        # No controller: the client going away (a reload) must not stop a response it can resume.
        answer = served.run_here(
            chat_stream_key(chat_id), stream_id, stream, controller.abort, supersede=True
        )
        return SSEStreamResponse(answer, heartbeat_ms=heartbeat_ms, headers=headers)

    async def dispatch(
        request: Request, body: Mapping[str, Any], principal: object, runner: ChatRunner
    ) -> Any:
        agent_id = agent or request.path_params["agent_id"]
        owner = owner_key(principal)
        await check_chat_request(
            mastra=mastra,
            agent_id=agent_id,
            params=body,
            version=version,
            allow_system_messages=allow_system_messages,
            owner=owner,
        )
        traceparent = request.headers.get("traceparent")
        context = await _built_context(request_context, request, principal)
        return await _dispatch_turn(served, runner, agent_id, body, owner, traceparent, turn_options, context)

    return Route(
        path, answering_errors(start, checks, "chat request"), methods=["POST", "OPTIONS"], name=name
    )
