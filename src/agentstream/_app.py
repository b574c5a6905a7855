"""The ASGI app behind ``agentstream serve``: the chat page and ``useChat`` endpoints for a ``Mastra``."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from importlib import resources
from typing import TYPE_CHECKING, Any

from ._mastra import Mastra

if TYPE_CHECKING:
    from .resumable import ChatRunner, StreamStore, WorkflowRunner
    from .server import RequestGuard

UI_WORKFLOWS = "/api/workflow"
"""Where the AI SDK UI workflow routes of the app live (``@mastra/ai-sdk``'s ``workflowRoute`` path)."""

__all__ = [
    "AppLoadError",
    "check_models",
    "create_app",
    "demo_mastra",
    "load_app",
    "load_mastra",
    "load_workflow_target",
]


def demo_mastra() -> Mastra:
    """A ``Mastra`` holding the demo agent (offline ``demo`` model unless ``AGENTSTREAM_MODEL`` is set).

    Background tasks are on and every chat request is an until-idle stream, so the ``research``
    tool's ``data-background-task-*`` parts and the continuation answer reach the page. Storage is
    in memory unless ``AGENTSTREAM_DB`` names a SQLite file.
    """
    import os

    from ._demo import demo_mastra as build
    from .storage import SQLiteStore

    db = os.environ.get("AGENTSTREAM_DB")
    return build(
        os.environ.get("AGENTSTREAM_MODEL", "demo"),
        storage=SQLiteStore(db) if db else None,
        until_idle={"max_idle_ms": 120_000},
    )


class AppLoadError(ValueError):
    """``--app module:attr`` cannot be loaded; ``usage`` is true when the spec itself is wrong."""

    def __init__(self, message: str, *, usage: bool = True) -> None:
        super().__init__(message)
        self.usage = usage


def load_app(spec: str) -> Any:
    """``module:attr`` → a ``Mastra``, or an ASGI app to serve as it is.

    The module is looked up in the current directory first (as uvicorn does). ``attr`` may be a
    ``Mastra``, an ``Agent`` (served alone in a new ``Mastra``), an ASGI app, or a zero-argument
    factory returning one of those.
    """
    from .agent import Agent

    value = _attribute(spec)
    if _zero_argument_callable(value):
        try:
            value = value()
        except Exception as exc:
            raise AppLoadError(f"calling {spec}() failed: {type(exc).__name__}: {exc}", usage=False) from exc
    if isinstance(value, Agent):
        return Mastra(agents={value.id: value})
    if isinstance(value, Mastra) or _asgi_app(value):
        return value
    raise AppLoadError(
        f"{spec} is a {type(value).__name__}; expected a Mastra, an Agent, an ASGI app, "
        "or a zero-argument function returning one"
    )


def load_mastra(spec: str) -> Mastra:
    """``module:attr`` → the ``Mastra`` there (an instance, an ``Agent``, or a factory of one)."""
    value = load_app(spec)
    if not isinstance(value, Mastra):
        raise AppLoadError(f"{spec} is {type(value).__name__}, expected a Mastra instance")
    return value


def load_workflow_target(spec: str) -> Any:
    """``module:attr`` → a ``Workflow`` or a ``Mastra`` holding workflows (or a factory of one)."""
    from .workflows import Workflow

    value = _attribute(spec)
    if _zero_argument_callable(value) and not isinstance(value, Workflow):
        try:
            value = value()
        except Exception as exc:
            raise AppLoadError(f"calling {spec}() failed: {type(exc).__name__}: {exc}", usage=False) from exc
    if isinstance(value, (Workflow, Mastra)):
        return value
    raise AppLoadError(
        f"{spec} is a {type(value).__name__}; expected a Workflow, a Mastra, "
        "or a zero-argument function returning one"
    )


def _attribute(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise AppLoadError(f"expected 'module:attr' (e.g. 'myapp:mastra'), got {spec!r}")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, "")  # the current directory, as ``python -m`` and uvicorn do
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            raise AppLoadError(
                f"no module named {module_name!r} (looked in {os.getcwd()} and on sys.path): "
                "run from the directory that holds it, or add it to PYTHONPATH"
            ) from exc
        raise AppLoadError(f"importing {module_name!r} failed: {exc}", usage=False) from exc
    except Exception as exc:
        where = _where(exc)
        raise AppLoadError(
            f"importing {module_name!r} failed: {type(exc).__name__}: {exc}{where}", usage=False
        ) from exc
    try:
        value: Any = module
        for part in attr.split("."):
            value = getattr(value, part)
    except AttributeError:
        raise AppLoadError(f"module {module_name!r} has no attribute {attr!r}") from None
    return value


def _where(exc: BaseException) -> str:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return "" if tb is None else f" ({tb.tb_frame.f_code.co_filename}, line {tb.tb_lineno})"


def _zero_argument_callable(value: Any) -> bool:
    from .agent import Agent

    if isinstance(value, (Mastra, Agent, type)) or not callable(value):
        return False
    try:
        inspect.signature(value).bind()
    except (TypeError, ValueError):
        return False
    return True


def _asgi_app(value: Any) -> bool:
    """Callable as ``app(scope, receive, send)`` (ASGI 3)."""
    if not callable(value) or isinstance(value, type):
        return False
    try:
        inspect.signature(value).bind(None, None, None)
    except TypeError:
        return False
    except ValueError:  # no signature (a builtin): give it the benefit of the doubt
        return True
    return True


def check_models(mastra: Mastra) -> None:
    """Resolve every agent's model now; a model that cannot be used raises, naming the agent."""
    from .models import MissingAPIKeyError

    for key, agent in mastra.get_agents().items():
        try:
            agent.model  # noqa: B018 - resolving is the point
        except MissingAPIKeyError as exc:
            raise AppLoadError(f"agent {key!r} cannot use its model: {exc}", usage=False) from exc
        except ValueError as exc:
            raise AppLoadError(f"agent {key!r} has an unusable model: {exc}", usage=False) from exc


def _with_memory_agents(page: str, agents: dict[str, Any]) -> str:
    """The page, told which agents have memory (their chats are memory threads, listed at the side).
    An agent whose default options name its thread already keeps that one thread: not listed."""
    import html
    import json

    ids = [
        agent_id
        for agent_id, agent in agents.items()
        if getattr(agent, "memory", None) is not None
        and "memory" not in (getattr(agent, "default_options", None) or {})
    ]
    return page.replace("<body>", f'<body data-memory-agents="{html.escape(json.dumps(ids))}">', 1)


def create_app(
    mastra: Mastra | None = None,
    *,
    default_agent: str | None = None,
    smooth: bool = True,
    delay_in_ms: float | None = 10,
    heartbeat_ms: float = 15_000,
    send_reasoning: bool = True,
    send_sources: bool = True,
    send_goals: bool = True,
    guard: RequestGuard | None = None,
    stream_store: StreamStore | bool | None = True,
    runner: ChatRunner | None = None,
    workflow_runner: WorkflowRunner | None = None,
    mastra_api: bool = True,
    record_traces: bool = True,
) -> Any:
    """A Starlette app: Mastra's server API under ``/api`` (`agentstream.mastra_api`: what Mastra
    Studio and ``@mastra/client-js`` call, ``GET /api/agents``, ``POST
    /api/agents/{agent_id}/stream``, ``/api/tools``, ``/api/workflows``, ``/api/memory``...), and
    beside it the AI SDK UI routes of the chat page at ``/``: ``GET /api/chat/info`` (the agents by
    registration key, ``resumable``), ``POST /api/chat[/{agent_id}]``; ``GET /api/workflow`` (the
    workflows), ``POST /api/workflow/{workflow_id}/stream`` (start, or resume with ``runId`` +
    ``resumeData``), ``POST /api/workflow/{workflow_id}/resume`` and ``POST
    /api/workflow/{workflow_id}/runs/{run_id}/cancel`` (singular ``workflow``, as
    ``@mastra/ai-sdk``'s ``workflowRoute``: Mastra's plural paths are its own API's; see
    docs/decisions/mastra-api.md).

    Smoothing is on by default (word chunking, ``delay_in_ms``), as in the seed's route example.
    ``guard`` (a `RequestGuard`) checks the API requests; errors are JSON. ``send_goals``: goal
    progress reaches the page as ``data-goal`` parts (the page shows each judged attempt).
    Chat responses are resumable (``GET /api/chat[/{agent_id}]/{chat_id}/stream``,
    ``useChat({resume: true})``; ``DELETE`` on that path stops the answer) through ``stream_store``: ``True`` (default) keeps them in this process (`MemoryStreamStore`), a
    `StreamStore` such as `RedisStreamStore` shares them between server processes, ``None`` or
    ``False`` turns resuming off (a client that goes away then stops its run).
    ``runner`` (a `ChatRunner` such as ``agentstream.durable.DurableChat``) runs the chat turns on
    worker processes that share ``stream_store`` (required then); smoothing is then the workers'.
    Workflow runs are recorded in the same store (``GET /api/workflow/{workflow_id}/runs/{run_id}/stream``
    serves a run's active stream again); ``workflow_runner`` (``agentstream.durable.DurableWorkflows``)
    runs them on the workers. ``mastra_api=False`` leaves Mastra's API out.

    ``record_traces`` (default): while the app serves (its ASGI lifespan, which uvicorn and
    ``agentstream serve`` run), every agent and workflow run is traced into the ``Mastra``'s storage,
    prompts and answers included, for Studio's traces pages (`tracing.record_spans_while_serving`;
    needs the ``otel`` extra, a warning otherwise). ``False``, or ``agentstream serve
    --no-record-traces``: nothing is traced unless the app switches tracing on itself.
    """
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse
    from starlette.routing import Route

    from .ai_sdk import ChatRequestError, Jobs, smooth_stream
    from .resumable import MemoryStreamStore
    from .server import InternalServerError, error_response, memory_routes
    from .server import RequestGuard as Guard

    mastra = mastra or demo_mastra()
    agents = mastra.get_agents()
    workflows = mastra.get_workflows()
    if not agents and not workflows:
        raise ValueError("the Mastra instance has no agents or workflows to serve")
    default = default_agent or next(iter(agents), None)
    page = _with_memory_agents(
        resources.files("agentstream._web").joinpath("chat.html").read_text(encoding="utf-8"), agents
    )
    options: dict[str, Any] = {
        "heartbeat_ms": heartbeat_ms,
        "send_reasoning": send_reasoning,
        "send_sources": send_sources,
        "send_goals": send_goals,
        "experimental_transform": smooth_stream(delay_in_ms=delay_in_ms) if smooth and not runner else None,
        "guard": guard or Guard(),
        "include_sub_agent_metadata": True,  # the page shows sub-agents and workflows at work
    }

    async def index(request: Request) -> HTMLResponse:
        # Mastra Studio fetches the server's root (with credentials) before its API: an allowed
        # origin may read it, as it may read Mastra's own root page.
        return HTMLResponse(page, headers=_cors(options["guard"], request))

    async def chat_info(request: Request) -> JSONResponse:
        try:
            await options["guard"].admit(request)
        except ChatRequestError as exc:
            return error_response(exc)
        listed = [{"id": key, "name": agent.name} for key, agent in agents.items()]
        listed.sort(key=lambda a: a["id"] != default)
        # "resumable": the page asks for a running answer on load only where there is a resume route.
        return JSONResponse({"agents": listed, "resumable": resumable})

    async def list_workflows(request: Request) -> JSONResponse:
        try:
            await options["guard"].admit(request)
        except ChatRequestError as exc:
            return error_response(exc)
        listed = [{**workflow.describe(), "id": key} for key, workflow in workflows.items()]
        return JSONResponse({"workflows": listed})

    workflow_options = {k: options[k] for k in ("heartbeat_ms", "send_reasoning", "send_sources", "guard")}
    store = MemoryStreamStore() if stream_store is True else stream_store or None
    if runner is not None and store is None:
        raise ValueError("create_app(runner=...) needs the stream_store its workers write to")
    if workflow_runner is not None and store is None:
        raise ValueError("create_app(workflow_runner=...) needs the stream_store its workers write to")
    # The app's one job service: every route below hands its chat turns and workflow legs to it,
    # so a stop or cancel reaches a job another route started (no state outside this app).
    jobs = Jobs(store)
    workflow_options.update(jobs=jobs, runner=workflow_runner)
    workflow_routes = _ui_workflow_routes(mastra, workflow_options, jobs, heartbeat_ms)
    chat_routes = _chat_routes(mastra, default, jobs, runner, options)
    resumable = default is not None and store is not None

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        if not isinstance(exc, HTTPException):
            return error_response(InternalServerError())  # the traceback still reaches the log
        error = ChatRequestError(str(exc.detail), status_code=exc.status_code, headers=exc.headers)
        # readable by an allowed origin: a Studio page asking for a route we lack sees the 404
        return error_response(error, _cors(options["guard"], request))

    mastra_routes = _mastra_api(mastra, options["guard"], jobs, runner, workflow_runner) if mastra_api else []
    return Starlette(
        lifespan=_recording_traces(mastra) if record_traces else None,
        exception_handlers={HTTPException: http_error, Exception: http_error},
        routes=[
            Route("/", index),
            # Ours before Mastra's: /api/chat/info is no Mastra path, and no Mastra route matches it.
            Route("/api/chat/info", chat_info),
            *chat_routes,
            Route(UI_WORKFLOWS, list_workflows),
            *workflow_routes,
            # Mastra's API (Studio, @mastra/client-js) at Mastra's paths, which ours no longer take.
            *mastra_routes,
            *memory_routes(mastra, options["guard"]),  # GET /api/memory/threads... (server/_memory_routes.py)
        ],
    )


def _chat_routes(
    mastra: Mastra, default: str | None, jobs: Any, runner: Any, options: dict[str, Any]
) -> list[Any]:
    """The page's chat routes (``POST /api/chat[/{agent_id}]``) and, with a store, their resume
    and stop routes."""
    from .server import chat_route, resume_route, stop_route

    if default is None:
        return []
    routes = [
        chat_route(mastra, "/api/chat", agent=default, jobs=jobs, runner=runner, **options),
        chat_route(mastra, "/api/chat/{agent_id}", jobs=jobs, runner=runner, **options),
    ]
    if jobs.store is not None:
        guard = options["guard"]
        resume = {"guard": guard, "heartbeat_ms": options["heartbeat_ms"]}
        routes += [
            resume_route(jobs, "/api/chat/{chat_id}/stream", **resume),
            resume_route(jobs, "/api/chat/{agent_id}/{chat_id}/stream", **resume),
            stop_route(jobs, "/api/chat/{chat_id}/stream", guard=guard, runner=runner),
            stop_route(jobs, "/api/chat/{agent_id}/{chat_id}/stream", guard=guard, runner=runner),
        ]
    return routes


def _recording_traces(mastra: Mastra) -> Any:
    """The app's lifespan: its runs' spans kept in ``mastra.storage`` while it serves."""
    import contextlib
    import logging

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        try:
            from .tracing import record_spans_while_serving
        except ImportError:  # the SDK is optional: serving works, Studio's traces stay empty
            logging.getLogger("agentstream").warning(
                "no traces are kept for Studio: recording them needs the OpenTelemetry SDK "
                "(pip install 'agentstream[otel]')"
            )
            yield
            return
        recording = record_spans_while_serving(mastra.storage)
        try:
            yield
        finally:
            await recording.stop()

    return lifespan


def _cors(guard: Any, request: Any) -> dict[str, str]:
    """The guard's CORS headers, with credentials for a named origin (Studio sends cookies)."""
    headers: dict[str, str] = guard.cors_headers(request)
    if headers.get("access-control-allow-origin", "*") != "*":
        headers["access-control-allow-credentials"] = "true"
    return headers


def _ui_workflow_routes(mastra: Mastra, options: dict[str, Any], jobs: Any, heartbeat_ms: float) -> list[Any]:
    """The AI SDK UI workflow routes of the page under `UI_WORKFLOWS`."""
    from .server import workflow_cancel_route, workflow_route, workflow_stream_route

    runs = f"{UI_WORKFLOWS}/{{workflow_id}}/runs/{{run_id}}"
    routes = [
        workflow_route(mastra, f"{UI_WORKFLOWS}/{{workflow_id}}/stream", **options),
        workflow_route(mastra, f"{UI_WORKFLOWS}/{{workflow_id}}/resume", resume=True, **options),
        workflow_cancel_route(
            mastra, f"{runs}/cancel", guard=options["guard"], jobs=jobs, runner=options["runner"]
        ),
    ]
    if jobs.store is not None:
        routes.append(
            workflow_stream_route(jobs, f"{runs}/stream", guard=options["guard"], heartbeat_ms=heartbeat_ms)
        )
    return routes


def _mastra_api(mastra: Mastra, guard: Any, jobs: Any, runner: Any, workflow_runner: Any) -> list[Any]:
    """Mastra's API routes (`agentstream.mastra_api`) for the app's registry, jobs and guard."""
    from .mastra_api import mastra_api_routes

    return mastra_api_routes(mastra, guard=guard, jobs=jobs, runner=runner, workflow_runner=workflow_runner)
