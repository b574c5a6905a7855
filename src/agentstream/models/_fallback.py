"""Model fallbacks: ``Agent(model=[{"model": …, "max_retries": n}, …])`` as Mastra's model list.

A `FallbackModel` tries its models in order, each up to ``1 + max_retries`` times, and falls over
only on errors worth it (an `APICallError` the provider marks retryable: 408, 409, 429, 5xx, a
timeout, a refused or broken connection; never a 400) and only before the first part of the answer
was streamed: after that an error is the answer's, as it would be without fallbacks. What happened
is on the answer: a ``response-metadata`` part names the model that answered, and the ``finish``
part's ``providerMetadata.agentstream.fallback`` lists every failed attempt.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._abort import until_aborted
from ._base import APICallError, CallOptions, LanguageModel, ModelStream, StreamPart
from ._http import Sleep

__all__ = ["FallbackModel", "ModelEntry", "fallback_entries"]

_PREAMBLE = frozenset({"stream-start", "response-metadata", "raw"})


@dataclass(frozen=True)
class ModelEntry:
    """One model of a fallback list."""

    model: LanguageModel
    max_retries: int = 0
    """Further attempts on this model before the next one (Mastra's ``maxRetries``)."""


def check_fallback_list(spec: Sequence[Any]) -> None:
    """Refuse a malformed fallback list at once (naming the entry), without resolving any model."""
    fallback_entries(spec, lambda _model: None, resolved=False)


def fallback_entries(
    spec: Sequence[Any], resolve: Any, default_retries: int = 0, *, resolved: bool = True
) -> list[ModelEntry]:
    """Mastra's ``[{model, maxRetries?, enabled?}, …]`` (or bare models) as entries; disabled ones left out.

    A model string's HTTP client gets ``max_retries = 0``: the list owns the retries, so a 503 is not
    retried both by the client and by the list.
    """
    entries: list[ModelEntry] = []
    enabled = 0
    for index, item in enumerate(spec):
        config = dict(item) if isinstance(item, Mapping) else {"model": item}
        where = f"model[{index}]"
        if "model" not in config:
            raise ValueError(
                f"{where}: expected {{'model': ..., 'max_retries'?: int}}, got keys {sorted(config)}"
            )
        if config.get("enabled", True) is False:
            continue
        enabled += 1
        retries = config.get("max_retries", config.get("maxRetries", default_retries))
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ValueError(f"{where}.max_retries: expected an integer >= 0, got {retries!r}")
        model = config["model"]
        if isinstance(model, str) and not resolved:
            continue
        if isinstance(model, str):
            model = resolve(model)
            if hasattr(model, "max_retries"):
                model.max_retries = 0
        elif not isinstance(model, LanguageModel):
            raise TypeError(
                f"{where}.model: expected a model string or a LanguageModel, got {type(model).__name__}"
            )
        entries.append(ModelEntry(model, retries))
    if not enabled:
        raise ValueError("model: the fallback list has no enabled model")
    return entries


def _worth_another_try(part: StreamPart) -> APICallError | None:
    error = part.get("error") if part["type"] == "error" else None
    return error if isinstance(error, APICallError) and error.is_retryable else None


def _name(model: LanguageModel) -> str:
    return f"{model.provider}/{model.model_id}"


class FallbackModel:
    """A `LanguageModel` that answers with the first of its models that can (see the module docstring)."""

    specification_version = "v2"

    def __init__(
        self, entries: Sequence[ModelEntry], *, retry_initial_delay: float = 0.5, sleep: Sleep | None = None
    ):
        if not entries:
            raise ValueError("FallbackModel needs at least one model")
        self.entries = list(entries)
        self.provider = entries[0].model.provider
        self.model_id = entries[0].model.model_id
        self.retry_initial_delay = retry_initial_delay
        self._sleep: Sleep = sleep or asyncio.sleep

    def __repr__(self) -> str:
        return f"FallbackModel([{', '.join(_name(e.model) for e in self.entries)}])"

    @staticmethod
    def check(spec: Sequence[Any]) -> None:
        """Refuse a malformed fallback list at once (naming the entry), without resolving any model."""
        check_fallback_list(spec)

    def do_stream(self, options: CallOptions) -> ModelStream:
        """Stream the first answer any model gives (the parts of failed attempts are not shown)."""
        info = ModelStream()
        return info.attach(self._stream(options, info))

    async def _stream(self, options: CallOptions, info: ModelStream) -> AsyncGenerator[StreamPart, None]:
        failures: list[dict[str, Any]] = []
        signal = options.get("abort_signal")
        for n, entry in enumerate(self.entries):
            for attempt in range(entry.max_retries + 1):
                if attempt:  # the next model is tried at once; the same one after a backoff
                    await until_aborted(
                        self._sleep(self.retry_initial_delay * 2.0 ** min(attempt - 1, 5)), signal
                    )
                stream = entry.model.do_stream(options)
                held, error = await self._until_answer(stream)
                last = n == len(self.entries) - 1 and attempt == entry.max_retries
                if error is not None and not last:
                    failures.append(_failure(entry.model, error, n))
                    continue
                info.request = getattr(stream, "request", {})
                info.response = getattr(stream, "response", {})
                info.model = getattr(stream, "model", None) or entry.model
                info.fallback_index = n
                info.attempts = [dict(f) for f in failures]
                async for part in self._answer(entry.model, stream, held, failures):
                    yield part
                return

    @staticmethod
    async def _until_answer(
        stream: AsyncIterator[StreamPart],
    ) -> tuple[list[StreamPart], APICallError | None]:
        """The parts before the answer starts, and the error that ended the call there (if worth a retry)."""
        held: list[StreamPart] = []
        async for part in stream:
            held.append(part)
            error = _worth_another_try(part)
            if error is not None:
                await _close(stream)
                return held, error
            if part["type"] not in _PREAMBLE:
                break
        return held, None

    async def _answer(
        self,
        model: LanguageModel,
        stream: AsyncIterator[StreamPart],
        held: list[StreamPart],
        failures: list[dict[str, Any]],
    ) -> AsyncGenerator[StreamPart, None]:
        named = False
        try:
            for part in held:
                if part["type"] == "response-metadata":
                    named = True
                    part = {**part, "modelId": part.get("modelId") or model.model_id}
                elif part["type"] not in _PREAMBLE and part["type"] != "error" and not named:
                    named = True
                    yield {"type": "response-metadata", "modelId": model.model_id}
                yield self._noted(part, model, failures)
            async for part in stream:
                yield self._noted(part, model, failures)
        finally:
            await _close(stream)

    @staticmethod
    def _noted(part: StreamPart, model: LanguageModel, failures: list[dict[str, Any]]) -> StreamPart:
        if part["type"] != "finish" or not failures:
            return part
        meta = dict(part.get("providerMetadata") or {})
        meta["agentstream"] = {
            **meta.get("agentstream", {}),
            "fallback": {"model": _name(model), "failed": failures},
        }
        return {**part, "providerMetadata": meta}


def _failure(model: LanguageModel, error: APICallError, index: int) -> dict[str, Any]:
    failure: dict[str, Any] = {"model": _name(model), "index": index, "message": error.client_message}
    if error.status_code is not None:
        failure["statusCode"] = error.status_code
    return failure


async def _close(stream: AsyncIterator[StreamPart]) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()
