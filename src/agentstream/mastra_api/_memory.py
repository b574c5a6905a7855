"""The Mastra API's memory routes (to be built)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from ._context import ApiContext

__all__ = ["routes"]


def routes(context: ApiContext) -> list[BaseRoute]:
    """None yet."""
    return []
