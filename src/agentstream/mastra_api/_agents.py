"""The Mastra API's agents: ``GET /api/agents`` (an object keyed by agent id, as Mastra answers),
``GET /api/agents/:agentId`` (by id or registration key) and the run routes of `_agent_runs`.

An agent is described as Mastra's ``SerializedAgent``: name, description, instructions, tools
(`tool_json`), sub-agents and workflows by key, processors ``[{id, name}]``, model provider / id /
specification version, ``supportsMemory`` and its JSON default options. Nothing else of the agent
leaves the server: no model credentials, headers or callables.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._secrets import redact, redact_value
from . import _agent_runs, _thread_runs
from ._http import api_route, json_answer
from ._tools import find_agent, tool_json

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from ..agent import Agent
    from ._context import ApiContext

__all__ = ["agent_json", "routes"]

log = logging.getLogger("agentstream.mastra_api")
_UPPER = re.compile(r"_([a-z0-9])")


def _camel(name: str) -> str:
    return _UPPER.sub(lambda m: m.group(1).upper(), name)


_SHOWN_OPTIONS = frozenset(
    {
        "max_steps",
        "tool_choice",
        "active_tools",
        "require_tool_approval",
        "until_idle",
        "tool_call_concurrency",
    }
)
_SHOWN_SETTINGS = frozenset(
    {"temperature", "top_p", "top_k", "max_output_tokens", "stop_sequences", "seed"}
    | {"presence_penalty", "frequency_penalty"}
)


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _json_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The default options a client may see, as Mastra's camelCase ``defaultOptions``: the run
    limits and sampling settings only (an allow-list: headers, provider options, callables and
    processors stay on the server), with any configured secret redacted besides."""
    shown: dict[str, Any] = {_camel(k): v for k, v in options.items() if k in _SHOWN_OPTIONS and _plain(v)}
    settings = options.get("model_settings")
    if isinstance(settings, Mapping):
        kept = {_camel(k): v for k, v in settings.items() if k in _SHOWN_SETTINGS and _plain(v)}
        if kept:
            shown["modelSettings"] = kept
    return dict(redact_value(shown))


def _processors(processors: list[Any]) -> list[dict[str, Any]]:
    out = []
    for processor in processors:
        ident = getattr(processor, "id", None) or type(processor).__name__
        entry = {"id": str(ident)}
        name = getattr(processor, "name", None)
        if isinstance(name, str):
            entry["name"] = name
        out.append(entry)
    return out


def _model(agent: Agent) -> dict[str, Any]:
    try:
        model = agent.model
    except Exception as exc:  # a model without its API key is still listed, without model info
        log.warning("agent %s: model not resolved for the API: %s", agent.id, type(exc).__name__)
        return {}
    out = {
        "provider": getattr(model, "provider", None),
        "modelId": getattr(model, "model_id", None),
        "modelVersion": getattr(model, "specification_version", None),
    }
    return {k: str(v) for k, v in out.items() if v is not None}


def agent_json(agent: Agent) -> dict[str, Any]:
    """``GET /api/agents/:agentId``'s answer for ``agent``."""
    return {
        "name": agent.name,
        "description": agent.description or "",
        "instructions": redact(agent.instructions),  # Mastra shows them; a configured secret in them is not
        "tools": {key: tool_json(tool) for key, tool in agent.tools.items()},
        "agents": {key: {"id": sub.id, "name": sub.name} for key, sub in agent.agents.items()},
        "workflows": {
            key: {"name": getattr(workflow, "id", None) or key} for key, workflow in agent.workflows.items()
        },
        "skills": [],
        "workspaceTools": [],
        "browserTools": [],
        "hasBrowser": False,
        "inputProcessors": _processors(agent.input_processors),
        "outputProcessors": _processors(agent.output_processors),
        **_model(agent),
        "supportsMemory": True,
        "defaultOptions": _json_options(agent.default_options),
        "defaultGenerateOptionsLegacy": {},
        "defaultStreamOptionsLegacy": {},
        "source": "code",
    }


def routes(context: ApiContext) -> list[BaseRoute]:
    """The agents routes: list, details, and the runs (`_agent_runs`)."""

    async def list_agents(request: Request, _: object) -> Response:
        listed = {
            agent.id: {"id": agent.id, **agent_json(agent), "hasDraft": False}
            for agent in context.mastra.get_agents().values()
        }
        return json_answer(context, request, listed)

    async def get_agent(request: Request, _: object) -> Response:
        _, agent = find_agent(context, request.path_params["agent_id"])
        return json_answer(context, request, agent_json(agent))

    async def speakers(request: Request, _: object) -> Response:
        find_agent(context, request.path_params["agent_id"])
        return json_answer(context, request, [])  # no voice provider: Mastra's answer without one

    return [
        api_route(context, "/agents", list_agents, ["GET"], "mastra agents"),
        api_route(context, "/agents/{agent_id}/voice/speakers", speakers, ["GET"], "mastra agent speakers"),
        api_route(context, "/agents/{agent_id}", get_agent, ["GET"], "mastra agent"),
        *_agent_runs.routes(context),
        *_thread_runs.routes(context),
    ]
