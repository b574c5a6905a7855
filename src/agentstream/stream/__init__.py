"""Streams of chunks: ``ModelOutput`` (many consumers, awaitable results), transforms, smoothing."""

from __future__ import annotations

from ._output import ModelOutput, RunStatus, UnresolvedResultError
from ._results import AbortEvent, ErrorEvent, FinishEvent, FullOutput, StepResult, Usage
from ._types import ChunkStream, Transform, TransformFactory, apply_transforms

__all__ = [
    "AbortEvent",
    "ChunkStream",
    "ErrorEvent",
    "FinishEvent",
    "FullOutput",
    "ModelOutput",
    "RunStatus",
    "StepResult",
    "Transform",
    "TransformFactory",
    "UnresolvedResultError",
    "Usage",
    "apply_transforms",
]
