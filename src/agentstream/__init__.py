"""agentstream: AI agents whose whole life streams as one typed sequence of chunks.

The most used names are here; each subpackage has its own curated ``__all__``:
``agentstream.chunks`` (the protocol), ``agentstream.stream`` (``ModelOutput``, ``smooth_stream``),
``agentstream.models`` (providers), ``agentstream.tools``, ``agentstream.agent``,
``agentstream.ai_sdk`` (useChat), ``agentstream.storage``, ``agentstream.workflows``,
``agentstream.tracing`` (OpenTelemetry),
``agentstream.testing``.
"""

from __future__ import annotations

import logging as _logging

from ._abort import AbortController, AbortError, AbortSignal
from ._mastra import Mastra
from ._request_context import RequestContext
from .agent import Agent
from .chunks import Chunk, ChunkFrom, decode_chunk, encode_chunk
from .memory import Memory
from .stream import ModelOutput, smooth_stream
from .tools import Tool, ToolContext, tool
from .tracing import InstrumentationSettings, instrument
from .workflows import Workflow, create_step, create_workflow

__all__ = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "Agent",
    "Chunk",
    "ChunkFrom",
    "InstrumentationSettings",
    "Mastra",
    "Memory",
    "ModelOutput",
    "RequestContext",
    "Tool",
    "ToolContext",
    "Workflow",
    "create_step",
    "create_workflow",
    "decode_chunk",
    "encode_chunk",
    "instrument",
    "smooth_stream",
    "tool",
]
__version__ = "0.1.0"

# A library logs, the application decides where to (``agentstream serve`` sends WARNING and up to
# stderr); without this, Python's last-resort handler would print run errors into CLI output.
_logging.getLogger("agentstream").addHandler(_logging.NullHandler())
