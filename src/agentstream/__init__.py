"""agentstream: AI agents whose whole life streams as one typed sequence of chunks."""

from __future__ import annotations

from ._abort import AbortController, AbortError, AbortSignal

__all__ = ["AbortController", "AbortError", "AbortSignal"]
__version__ = "0.1.0"
