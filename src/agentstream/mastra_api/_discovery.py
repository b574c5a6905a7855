"""The routes Mastra Studio calls before it shows anything: what this server is and what it has.

Each answers as ``@mastra/server`` does for a server without that feature (no auth provider, no
workspaces, scorers, processors registry, MCP registry, editor or experiments): the same keys,
empty. ``GET /`` is Mastra's own landing answer in spirit: a short HTML page naming the API.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from starlette.responses import HTMLResponse

from ._http import api_route, cors_headers, json_answer
from ._providers import providers_json

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from ._context import ApiContext

__all__ = ["routes"]

_EMPTY: dict[str, Any] = {
    # No Mastra auth provider (ours is the guard's hook, a token Studio sends as a header from its
    # settings): Studio shows no login, as Mastra's answer without a provider says.
    "/auth/capabilities": {"enabled": False, "login": None},
    "/workspaces": {"workspaces": []},
    "/observability/feedback": {
        "feedback": [],
        "pagination": {"total": 0, "page": 0, "perPage": 10, "hasMore": False},
        "deltaCursor": "0",
    },
    "/processors": {},
    "/experiments/review-summary": {"counts": []},
    "/editor/builder/settings": {"enabled": False, "modelPolicy": {"active": False}},
    "/mcp/v0/servers": {"servers": [], "total_count": 0, "next": None},
    "/scores/scorers": {},
    # the agent builder's models (with the editor, which we do not have; the chat's picker reads
    # /agents/providers, `_providers`)
    "/editor/builder/models/available": {"providers": []},
    "/channels/platforms": [],
}

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Mastra Server</title></head>
<body><h1>Mastra Server</h1><p>agentstream answers Mastra's server API under <code>{prefix}</code>:
point Mastra Studio (<code>mastra studio</code>) or <code>@mastra/client-js</code> at this address.</p>
</body></html>
"""


def _observability_enabled(context: ApiContext) -> bool:
    """Mastra's ``observabilityEnabled`` (an observability instance is configured, so runs are
    traced into its store): whether the spans that end are saved into this app's storage now
    (``create_app`` while it serves, by default, or the app's own `record_spans`). Studio reads
    it to enable an agent's Traces tab (the traces page, scoped to the agent)."""
    if "agentstream.tracing._recorder" not in sys.modules:
        return False  # no recorder was ever made: the module (and OpenTelemetry's SDK) loads with the first
    from ..tracing import recording_spans

    return recording_spans(context.mastra.storage)


def _system_packages(context: ApiContext) -> dict[str, Any]:
    storage = type(context.mastra.storage).__name__
    return {
        "packages": [],
        "isDev": False,
        "cmsEnabled": False,
        "liveKitConnectionRouteEnabled": False,
        "observabilityEnabled": _observability_enabled(context),
        "storageType": storage,
        "observabilityStorageType": storage,
        "observabilityStorageCapabilities": {"metrics": False, "logs": False, "traceQueryDiscovery": False},
    }


def routes(context: ApiContext) -> list[BaseRoute]:
    """``/api`` (Mastra's server page), the auth capabilities and the empty registries Studio reads."""

    def fixed(data: Any) -> Any:
        async def answer(request: Request, _: object) -> Response:
            return json_answer(context, request, data)

        return answer

    async def packages(request: Request, _: object) -> Response:
        return json_answer(context, request, _system_packages(context))

    async def page(request: Request, _: object) -> Response:
        html = _PAGE.format(prefix=context.prefix or "/")
        return HTMLResponse(html, headers=cors_headers(context.guard, request))

    # Mastra's one public route: Studio asks it before anything, to learn whether to show a login
    out: list[BaseRoute] = [
        api_route(context, path, fixed(data), ["GET"], f"mastra {path}", public=path == "/auth/capabilities")
        for path, data in _EMPTY.items()
    ]
    out.append(api_route(context, "/system/packages", packages, ["GET"], "mastra /system/packages"))

    async def providers(request: Request, _: object) -> Response:
        return json_answer(context, request, providers_json(context))

    out.append(api_route(context, "/agents/providers", providers, ["GET"], "mastra /agents/providers"))
    out.append(api_route(context, "", page, ["GET"], "mastra api page"))
    return out
