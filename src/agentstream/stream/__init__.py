"""Streams of chunks: ``ModelOutput`` (many consumers, awaitable results), transforms, smoothing."""

from __future__ import annotations

from ._accumulator import RunAccumulator, StepBuffers
from ._jsregex import JSRegexError, js_regex, parse_js_literal
from ._log import ChunkLog
from ._output import ModelOutput, RunStatus, UnresolvedResultError
from ._promise import Delayed
from ._results import (
    AbortEvent,
    ErrorEvent,
    FinishEvent,
    FullOutput,
    StepResult,
    TripwireInfo,
    add_usage,
    total_usage,
)
from ._segmenter import Segment, Segmenter
from ._smooth import (
    SmoothStream,
    SmoothStreamFactory,
    check_transform_factories,
    compose_transforms,
    smooth_stream,
    smooth_stream_factory,
)
from ._types import ChunkStream, Transform, TransformFactory, apply_transforms
from ._usage import Usage

__all__ = [
    "AbortEvent",
    "ChunkLog",
    "ChunkStream",
    "Delayed",
    "ErrorEvent",
    "FinishEvent",
    "FullOutput",
    "JSRegexError",
    "ModelOutput",
    "RunAccumulator",
    "RunStatus",
    "Segment",
    "Segmenter",
    "SmoothStream",
    "SmoothStreamFactory",
    "StepBuffers",
    "StepResult",
    "Transform",
    "TransformFactory",
    "TripwireInfo",
    "UnresolvedResultError",
    "Usage",
    "add_usage",
    "apply_transforms",
    "check_transform_factories",
    "compose_transforms",
    "js_regex",
    "parse_js_literal",
    "smooth_stream",
    "smooth_stream_factory",
    "total_usage",
]
