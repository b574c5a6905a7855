"""The processors of the recorded processor vectors, written in Python from each vector's
``agent.optionsNotes`` (the recordings describe the JavaScript processors in words)."""

from __future__ import annotations

from typing import Any

import msgspec

from agentstream.chunks import Chunk, TextDelta


class InputRewriter:
    """``input-rewriter``: every user message's text parts get ``hunter2`` → ``[password]``."""

    id = "input-rewriter"

    async def process_input(self, *, messages: list[dict[str, Any]], **_: Any) -> list[dict[str, Any]]:
        out = []
        for message in messages:
            if message["role"] == "user" and isinstance(message["content"], list):
                content = [
                    {**part, "text": part["text"].replace("hunter2", "[password]")}
                    if part.get("type") == "text"
                    else part
                    for part in message["content"]
                ]
                message = {**message, "content": content}
            out.append(message)
        return out


class Redactor:
    """``redactor``: ``secret`` → ``[REDACTED]`` in every text delta, one delta at a time."""

    id = "redactor"

    async def process_output_stream(self, *, part: Chunk, **_: Any) -> Chunk:
        if isinstance(part, TextDelta):
            payload = msgspec.structs.replace(
                part.payload, text=part.payload.text.replace("secret", "[REDACTED]")
            )
            return msgspec.structs.replace(part, payload=payload)
        return part


class Traced:
    """Records each call as the vectors' ``processorTrace`` does."""

    def __init__(self) -> None:
        self.trace: list[dict[str, Any]] = []


class NoHedgingStep(Traced):
    id = "no-hedging"

    async def process_output_step(
        self, *, messages: Any, text: str, abort: Any, retry_count: int, step_number: int, **_: Any
    ) -> Any:
        self.trace.append(
            {
                "processor": self.id,
                "method": "processOutputStep",
                "stepNumber": step_number,
                "retryCount": retry_count,
                "text": text,
            }
        )
        if retry_count == 0 and "maybe" in text:
            abort('Do not hedge: remove the word "maybe".', retry=True, metadata={"word": "maybe"})
        return messages


class NoHedgingResult(Traced):
    id = "no-hedging"

    async def process_output_result(
        self, *, messages: Any, result: dict[str, Any], abort: Any, retry_count: int, **_: Any
    ) -> Any:
        self.trace.append(
            {
                "processor": self.id,
                "method": "processOutputResult",
                "retryCount": retry_count,
                "text": result["text"],
            }
        )
        if retry_count == 0 and "maybe" in result["text"]:
            abort('Do not hedge: remove the word "maybe".', retry=True, metadata={"word": "maybe"})
        return messages


class StepGuard(Traced):
    id = "step-guard"

    async def process_output_step(
        self, *, messages: Any, text: str, abort: Any, retry_count: int, step_number: int, **_: Any
    ) -> Any:
        self.trace.append(
            {
                "processor": self.id,
                "method": "processOutputStep",
                "stepNumber": step_number,
                "retryCount": retry_count,
                "text": text,
            }
        )
        if "forbidden" in text:
            abort("Forbidden content in step", metadata={"word": "forbidden"})
        return messages


class BannedWords:
    id = "banned-words"

    async def process_output_stream(self, *, part: Chunk, abort: Any, **_: Any) -> Chunk:
        if isinstance(part, TextDelta) and "forbidden" in part.payload.text:
            abort("Banned word detected", metadata={"word": "forbidden"})
        return part


def processors_for(vector: dict[str, Any]) -> tuple[dict[str, Any], list[Traced]]:
    """``stream()`` options with the vector's processors, and those that record a trace."""
    options = vector["agent"]["options"]
    made: dict[str, list[Any]] = {}
    for key, option in (("inputProcessors", "input_processors"), ("outputProcessors", "output_processors")):
        for label in options.get(key, []):
            made.setdefault(option, []).append(_make(label))
    out: dict[str, Any] = dict(made)
    if "maxProcessorRetries" in options:
        out["max_processor_retries"] = options["maxProcessorRetries"]
    traced = [p for ps in made.values() for p in ps if isinstance(p, Traced)]
    return out, traced


_LABELS = {
    "<processor input-rewriter>": InputRewriter,
    "<processor redactor>": Redactor,
    "<processor no-hedging (processOutputStep)>": NoHedgingStep,
    "<processor no-hedging (processOutputResult)>": NoHedgingResult,
    "<processor step-guard (processOutputStep)>": StepGuard,
    "<processor banned-words>": BannedWords,
}


def _make(label: str) -> Any:
    try:
        return _LABELS[label]()
    except KeyError:
        raise KeyError(
            f"no Python processor for the recorded {label!r}: add it to tests/agent/vector_processors.py"
        ) from None
