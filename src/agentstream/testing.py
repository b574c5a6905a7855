"""Public test doubles: a scripted ``LanguageModel`` and a virtual clock.

``ScriptedModel(steps)`` plays back the conformance vectors' ``modelSteps`` unchanged: call *i* of
``do_stream`` streams ``steps[i]`` (a list of AI SDK ``LanguageModelV2`` stream-part dicts) or raises
``steps[i]["throws"]`` before streaming. The tags the vectors use are understood: ``{"$date": iso}``
becomes a ``datetime``, ``{"$bytes": b64}`` bytes, ``{"$error": {...}}`` an exception,
``{"$undefined": true}`` removes the key, and the part ``{"$waitForAbort": true}`` holds the stream
until the call's abort signal fires (then raises the abort reason, as a provider's fetch would).
"""

from __future__ import annotations

import asyncio
import base64
import heapq
import itertools
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ._abort import AbortError, AbortSignal
from .models import CallOptions, StreamPart

__all__ = ["FakeClock", "RecordedCall", "ScriptExhaustedError", "ScriptedError", "ScriptedModel"]


class ScriptExhaustedError(RuntimeError):
    """The agent called the scripted model more often than the script has steps."""


class ScriptedError(Exception):
    """An error made from a vector's ``{"$error": {name, message, ...}}`` tag.

    Extra fields (``statusCode``, ``isRetryable``, ...) are kept in ``details`` so that the chunk codec
    writes them back next to ``name`` and ``message``.
    """

    def __init__(self, name: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.message = message
        self.details = dict(details or {})


@dataclass
class RecordedCall:
    """One ``do_stream`` call as the scripted model received it."""

    index: int
    prompt: list[dict[str, Any]]
    options: dict[str, Any]


def _make_error(spec: Any) -> BaseException:
    if isinstance(spec, BaseException):
        return spec
    if isinstance(spec, dict) and "$error" in spec:
        spec = spec["$error"]
    if isinstance(spec, dict):
        name = str(spec.get("name", "Error"))
        message = str(spec.get("message", ""))
        rest = {k: v for k, v in spec.items() if k not in ("name", "message", "stack")}
        return ScriptedError(name, message, rest)
    return ScriptedError("Error", str(spec))


def decode_tags(value: Any) -> Any:
    """Turn the vectors' ``$``-tags into Python values (see module docstring)."""
    if isinstance(value, list):
        return [decode_tags(v) for v in value if not _undefined(v)]
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, inner),) = value.items()
            if key == "$date":
                return datetime.fromisoformat(str(inner).replace("Z", "+00:00"))
            if key == "$bytes":
                return base64.b64decode(inner)
            if key == "$error":
                return _make_error(value)
        return {k: decode_tags(v) for k, v in value.items() if not _undefined(v)}
    return value


def _undefined(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and value.get("$undefined") is True


_WAIT = object()


def _generate_as_stream(result: Mapping[str, Any]) -> list[Any]:
    """A recorded ``doGenerate`` result (``{"generate": ...}``, e.g. Mastra's title call) as the
    stream parts of the same answer: our models only stream."""
    parts: list[Any] = [{"type": "stream-start", "warnings": list(result.get("warnings") or [])}]
    for i, item in enumerate(result.get("content") or []):
        if item.get("type") == "text":
            parts += [
                {"type": "text-start", "id": f"g{i}"},
                {"type": "text-delta", "id": f"g{i}", "delta": item.get("text", "")},
                {"type": "text-end", "id": f"g{i}"},
            ]
    parts.append(
        {
            "type": "finish",
            "finishReason": result.get("finishReason", "stop"),
            "usage": result.get("usage", {}),
        }
    )
    return parts


class ScriptedModel:
    """A ``LanguageModel`` whose call *i* streams ``steps[i]`` (see the module docstring)."""

    specification_version = "v2"

    def __init__(
        self,
        # Recorded JSON, tags and `$waitForAbort` markers included: plain mappings, not typed parts.
        steps: Sequence[Sequence[Mapping[str, Any]] | dict[str, Any]],
        *,
        provider: str = "mock-provider",
        model_id: str = "mock-model-id",
    ) -> None:
        self.provider = provider
        self.model_id = model_id
        self.calls: list[RecordedCall] = []
        self._steps: list[list[Any] | BaseException] = []
        for step in steps:
            if isinstance(step, dict) and "generate" in step:
                self._steps.append(_generate_as_stream(decode_tags(step["generate"])))
            elif isinstance(step, dict):
                if "throws" not in step:
                    raise ValueError(
                        f"a scripted step is a list of parts or {{'throws': error}}, got {step!r}"
                    )
                self._steps.append(_make_error(step["throws"]))
            else:
                self._steps.append(
                    [
                        _WAIT if isinstance(p, dict) and p.get("$waitForAbort") else decode_tags(p)
                        for p in step
                    ]
                )

    def do_stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        """Record the call and stream the next step of the script; `ScriptExhaustedError` when none is left."""
        index = len(self.calls)
        recorded = {k: v for k, v in options.items() if k != "prompt"}
        self.calls.append(RecordedCall(index, list(options.get("prompt", [])), recorded))
        if index >= len(self._steps):
            raise ScriptExhaustedError(
                f"ScriptedModel: model call #{index + 1} but the script has only {len(self._steps)} step(s)"
            )
        return self._play(self._steps[index], options.get("abort_signal"))

    async def _play(
        self, step: list[Any] | BaseException, signal: AbortSignal | None
    ) -> AsyncIterator[StreamPart]:
        if isinstance(step, BaseException):
            raise step
        for part in step:
            if part is _WAIT:
                if signal is None:
                    raise RuntimeError(
                        "ScriptedModel: $waitForAbort without an abort signal would wait forever"
                    )
                reason = await signal.wait()
                raise reason if isinstance(reason, BaseException) else AbortError(reason)
            yield part


@dataclass(order=True)
class _Sleeper:
    wake_at: float
    seq: int
    future: asyncio.Future[None] = field(compare=False)


class FakeClock:
    """Virtual time: ``await clock.sleep(s)`` returns when ``advance`` passes its deadline.

    ``now()`` is seconds, ``now_ms()`` milliseconds (pass ``clock.now_ms`` where a clock is taken).
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._sleepers: list[_Sleeper] = []
        self._seq = itertools.count()

    def now(self) -> float:
        """The virtual time in seconds."""
        return self._now

    def now_ms(self) -> float:
        """The virtual time in milliseconds."""
        return self._now * 1000.0

    async def sleep(self, seconds: float) -> None:
        """Wait until `advance` moves the virtual time `seconds` forward (a non-positive value just yields)."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, _Sleeper(self._now + seconds, next(self._seq), future))
        await future

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking every sleeper whose deadline passes, in order."""
        target = self._now + seconds
        while self._sleepers and self._sleepers[0].wake_at <= target:
            sleeper = heapq.heappop(self._sleepers)
            self._now = sleeper.wake_at
            if not sleeper.future.done():
                sleeper.future.set_result(None)
            await asyncio.sleep(0)
        self._now = target
        await asyncio.sleep(0)
