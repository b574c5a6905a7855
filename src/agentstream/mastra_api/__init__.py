"""Mastra's server API (the routes ``@mastra/server`` defines), so Mastra Studio and
``@mastra/client-js`` drive an agentstream backend: agents, tools, workflows, memory,
observability and the discovery routes Studio calls first.

`mastra_api_routes` returns Starlette routes behind the app's `RequestGuard`; ``create_app``
mounts them. Needs the ``server`` extra (starlette).
"""

from __future__ import annotations

from ._context import ApiContext
from ._routes import mastra_api_routes

__all__ = ["ApiContext", "mastra_api_routes"]
