"""The offline demo model (``"demo"``): deterministic, no network, streams like a real provider.

It thinks out loud (reasoning), calls the demo agent's tools when the prompt asks for them
(``weather`` for "weather in <city>", the slow ``research`` tool for "research <topic>"), and then
answers in several sentences, in bursty, uneven deltas. Pacing honours the call's abort signal.

A tool result that is a background task's placeholder ("Background task started. Task ID: ...")
gets a natural "running in the background, the answer will follow" reply; the continuation turn
(Mastra's directive plus the real result) is answered from the result.

Goals work offline too: asked as a goal judge (the goal judge's instructions), it answers the JSON
verdict, ``done`` when the latest answer mentions every keyword of the goal and ``continue``
naming the ones still missing; sent round again with that feedback (the ``[Goal attempt N/M]``
reminder), it answers with a revision that covers them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
from collections.abc import AsyncIterator
from typing import Any

from .._abort import AbortError, AbortSignal, until_aborted
from ._base import CallOptions, FinishReason, StreamPart

__all__ = ["DemoModel"]

_RAINBOW = (
    "A rainbow forms when sunlight meets a curtain of raindrops with the sun behind you. "
    "Each drop acts like a tiny prism: light bends (refracts) as it enters the water, reflects off the back "
    "of the drop, and bends again on the way out. Because water bends short wavelengths a little more than "
    "long ones, the white light fans out into its colours, with violet leaving the drop at about 40 degrees "
    "and red at about 42 degrees from the direction opposite the sun. Millions of drops each send you one "
    "colour from their particular angle, so you see a circular arc of red on the outside and violet on the "
    "inside. Sometimes light reflects twice inside the drops, giving a fainter secondary rainbow with the "
    "colours reversed and a darker band of sky, Alexander's band, between the two."
)

_WEATHER = re.compile(
    r"weather\s+(?:in|for|at)\s+([A-Za-z][\w .'-]*?)(?:[?.!,]|\s+(?:and|today|now)\b|$)", re.I
)
_RESEARCH = re.compile(r"research\s+(?:on\s+|about\s+)?(.+?)(?:[?.!]|$)", re.I)
_BOOK = re.compile(r"book\s+(?:a\s+)?table\s+(?:at|in)\s+(.+?)(?:\s+for\s+(\d+))?\s*(?:[?.!,]|$)", re.I)
_CHOOSE = re.compile(r"(?:pick|choose|find)\s+(?:a\s+)?time\s+(?:at|for)\s+(.+?)\s*(?:[?.!,]|$)", re.I)
_PLACEHOLDER = "Background task started. Task ID:"


def _is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(_PLACEHOLDER)


_GOAL_TAGS = ("<current-objective", "<system-reminder")
_JUDGE_PROMPT_START = "You are the goal judge."
_MISSING = "Cover what is still missing: "
_STOPWORDS = frozenset(
    "about after also and answer been does each explain from have into make more most must only over "
    "some such than that their them then there these they this very what when which while with write "
    "your".split()
)


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(
        p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text"
    )


def _last_user_text(prompt: list[dict[str, Any]]) -> str:
    """The user's latest question (a goal's objective and reminders are not questions)."""
    for message in reversed(prompt):
        if message.get("role") == "user":
            text = _text_of(message)
            if not text.startswith(_GOAL_TAGS):
                return text
    return ""


def _goal_feedback(prompt: list[dict[str, Any]]) -> str | None:
    """The judge's feedback when the last message sends the agent round again for a goal."""
    if not prompt or prompt[-1].get("role") != "user":
        return None
    text = _text_of(prompt[-1])
    if not text.startswith("<system-reminder") or "Judge feedback: " not in text:
        return None
    return text.split("Judge feedback: ", 1)[1].split("\n\n", 1)[0]


def _keywords(objective: str) -> list[str]:
    words = re.findall(r"[a-z][a-z'-]{3,}", objective.lower())
    return list(dict.fromkeys(w for w in words if w not in _STOPWORDS))


def _verdict(prompt: list[dict[str, Any]]) -> str:
    """The demo judge's JSON answer to the goal judge's question."""
    question = _text_of(prompt[-1]) if prompt else ""
    objective = question.removeprefix("Goal: ").split("\n\n", 1)[0]
    answer = question.split("Latest assistant message:\n", 1)[-1].lower()
    # a plural is covered by its singular ("rainbows" by "rainbow")
    missing = [w for w in _keywords(objective) if (w[:-1] if w.endswith("s") else w) not in answer]
    if missing:
        verdict = {"decision": "continue", "reason": _MISSING + ", ".join(missing) + "."}
    else:
        verdict = {"decision": "done", "reason": "The answer covers every part of the goal."}
    return json.dumps(verdict)


def _revision(prompt: list[dict[str, Any]], feedback: str) -> str:
    """The previous attempt again, completed with what the judge found missing."""
    previous = next((_text_of(m) for m in reversed(prompt) if m.get("role") == "assistant"), "")
    if feedback.startswith(_MISSING):
        terms = [t.strip() for t in feedback.removeprefix(_MISSING).rstrip(".").split(",") if t.strip()]
        added = " ".join(
            f"On {t}: the offline demo model cannot look {t} up, but a real model would cover it here."
            for t in terms
        )
    else:
        added = f"Taking the judge's feedback on board: {feedback}"
    return f"{previous}\n\n{added}" if previous else added


def _tool_results(prompt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool results that came after the last user message."""
    out: list[dict[str, Any]] = []
    for message in reversed(prompt):
        if message.get("role") == "user":
            break
        if message.get("role") == "tool":
            out[:0] = [p for p in message.get("content", []) if p.get("type") == "tool-result"]
    return out


class DemoModel:
    """See the module docstring. ``delay_ms`` is the mean pause between deltas (0 = no pauses)."""

    specification_version = "v2"
    provider = "demo"

    def __init__(self, model_id: str = "demo", *, delay_ms: float = 18.0, seed: int | None = None) -> None:
        self.model_id = model_id or "demo"
        self.delay_ms = delay_ms
        self.seed = seed

    def do_stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        return self._stream(options)

    async def _pause(self, rng: random.Random, signal: AbortSignal | None, scale: float = 1.0) -> None:
        if signal is not None and signal.aborted:
            raise AbortError(signal.reason)
        if self.delay_ms <= 0:
            return
        delay = self.delay_ms * scale * rng.choice((0.2, 0.5, 1.0, 1.0, 2.0, 4.0)) / 1000
        await until_aborted(asyncio.sleep(delay), signal)

    @staticmethod
    def _pieces(text: str, rng: random.Random) -> list[str]:
        pieces, i = [], 0
        while i < len(text):
            n = rng.choice((1, 2, 3, 4, 6, 9, 14, 20))
            pieces.append(text[i : i + n])
            i += n
        return pieces

    async def _stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        prompt = list(options.get("prompt", []))
        signal = options.get("abort_signal")
        if (
            prompt
            and prompt[0].get("role") == "system"
            and _text_of(prompt[0]).startswith(_JUDGE_PROMPT_START)
        ):
            async for part in self._judge(prompt, signal):
                yield part
            return
        tool_names = {t.get("name") for t in options.get("tools") or []}
        question = _last_user_text(prompt)
        results = _tool_results(prompt)
        digest = hashlib.sha256(f"{self.seed}:{question}:{len(results)}".encode()).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "response-metadata", "id": f"demo-{digest.hex()[:12]}", "modelId": self.model_id}
        await self._pause(rng, signal, 3)

        calls: list[tuple[str, dict[str, Any]]] = []
        if not results:
            weather = _WEATHER.search(question)
            research = _RESEARCH.search(question)
            if weather and "weather" in tool_names:
                calls.append(("weather", {"city": weather.group(1).strip().title()}))
            if research and "research" in tool_names:
                calls.append(("research", {"topic": research.group(1).strip()}))
            calls.extend(_booking_calls(question, tool_names))

        if calls:
            thought = (
                "The user wants "
                + " and ".join(f"{name} for {next(iter(args.values()))}" for name, args in calls)
                + ". I'll call the tool"
                + ("s" if len(calls) > 1 else "")
                + " first."
            )
        elif results and all(_is_placeholder(r.get("output", {}).get("value")) for r in results):
            thought = "The tool is running in the background; I'll tell the user the answer will follow."
        elif results:
            thought = "I have the tool results; let me summarise them clearly for the user."
        elif _goal_feedback(prompt) is not None:
            thought = f"The goal judge wants more: {_goal_feedback(prompt)} I'll complete my answer."
        else:
            thought = (
                f"Let me think about how to answer: {question[:80]!r}. I'll give a clear, structured answer."
            )
        yield {"type": "reasoning-start", "id": "reasoning-0"}
        for piece in self._pieces(thought, rng):
            await self._pause(rng, signal, 0.6)
            yield {"type": "reasoning-delta", "id": "reasoning-0", "delta": piece}
        yield {"type": "reasoning-end", "id": "reasoning-0"}

        output_chars = len(thought)
        if calls:
            for index, (name, args) in enumerate(calls):
                call_id = f"call_{digest.hex()[index * 6 : index * 6 + 8]}"
                text = json.dumps(args)
                yield {"type": "tool-input-start", "id": call_id, "toolName": name}
                for piece in self._pieces(text, rng):
                    await self._pause(rng, signal, 0.5)
                    yield {"type": "tool-input-delta", "id": call_id, "delta": piece}
                yield {"type": "tool-input-end", "id": call_id}
                yield {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": text}
                output_chars += len(text)
            finish: FinishReason = "tool-calls"
        else:
            feedback = _goal_feedback(prompt)
            answer = _revision(prompt, feedback) if feedback is not None else self._answer(question, results)
            yield {"type": "text-start", "id": "text-0"}
            for piece in self._pieces(answer, rng):
                await self._pause(rng, signal)
                yield {"type": "text-delta", "id": "text-0", "delta": piece}
            yield {"type": "text-end", "id": "text-0"}
            output_chars += len(answer)
            finish = "stop"
        input_chars = sum(len(json.dumps(m, default=str)) for m in prompt)
        inp, out = max(1, input_chars // 4), max(1, output_chars // 4)
        yield {
            "type": "finish",
            "finishReason": finish,
            "usage": {
                "inputTokens": inp,
                "outputTokens": out,
                "totalTokens": inp + out,
                "reasoningTokens": len(thought) // 4,
            },
        }

    async def _judge(
        self, prompt: list[dict[str, Any]], signal: AbortSignal | None
    ) -> AsyncIterator[StreamPart]:
        verdict = _verdict(prompt)
        rng = random.Random(verdict)
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "judge-0"}
        for piece in self._pieces(verdict, rng):
            await self._pause(rng, signal, 0.5)
            yield {"type": "text-delta", "id": "judge-0", "delta": piece}
        yield {"type": "text-end", "id": "judge-0"}
        tokens = max(1, len(verdict) // 4)
        yield {
            "type": "finish",
            "finishReason": "stop",
            "usage": {"inputTokens": tokens, "outputTokens": tokens, "totalTokens": 2 * tokens},
        }

    @staticmethod
    def _answer(question: str, results: list[dict[str, Any]]) -> str:
        if results:
            lines = []
            for result in results:
                value = result.get("output", {}).get("value")
                if _is_placeholder(value):
                    lines.append(_running_in_background(result))
                elif result.get("toolName") == "weather" and isinstance(value, dict):
                    lines.append(
                        f"In {value.get('city')} it is currently {value.get('temperatureC')}°C and "
                        f"{value.get('conditions')}."
                    )
                elif result.get("toolName") in ("book_table", "choose_time"):
                    lines.append(_booking_answer(result.get("toolName"), value))
                elif result.get("toolName") == "research" and isinstance(value, dict):
                    lines.append(f"Here is what I found about {value.get('topic')}: {value.get('summary')}")
                else:
                    lines.append(
                        f"The {result.get('toolName')} tool returned: {json.dumps(value, default=str)}."
                    )
            if all(_is_placeholder(r.get("output", {}).get("value")) for r in results):
                return " ".join(lines)
            return " ".join(lines) + " Let me know if you would like more detail."
        if re.search(r"rainbow", question, re.I):
            return _RAINBOW
        topic = question.strip().rstrip("?.!") or "your question"
        return (
            f"You asked: \u201c{topic}\u201d. I am the offline demo model, so I cannot look anything up, but "
            "I can show how an answer streams: this text arrives in uneven bursts, just like a real provider's. "
            "Set AGENTSTREAM_MODEL (for example openai/gpt-4o-mini) and an API key to get a real answer. "
            "Try asking about the weather in a city, or how rainbows form."
        )


def _booking_calls(question: str, tool_names: set[Any]) -> list[tuple[str, dict[str, Any]]]:
    """``book_table`` for "book a table at <name> [for <n>]", ``choose_time`` for "pick a time at <name>"."""
    calls: list[tuple[str, dict[str, Any]]] = []
    book, choose = _BOOK.search(question), _CHOOSE.search(question)
    if book and "book_table" in tool_names:
        calls.append(("book_table", {"restaurant": book.group(1), "people": int(book.group(2) or 2)}))
    if choose and "choose_time" in tool_names:
        calls.append(("choose_time", {"restaurant": choose.group(1)}))
    return calls


def _booking_answer(tool: Any, value: Any) -> str:
    if not isinstance(value, dict):  # declined: the reason the user gave
        return f"I have not made the booking ({value})."
    if tool == "book_table":
        return (
            f"Your table for {value.get('people')} at {value.get('restaurant')} is booked "
            f"(confirmation {value.get('confirmation')})."
        )
    return f"{value.get('time')} at {value.get('restaurant')} it is."


def _running_in_background(result: dict[str, Any]) -> str:
    """The reply to a background task's placeholder result (instead of quoting it)."""
    args = result.get("input")
    subject = next(iter(args.values()), None) if isinstance(args, dict) and args else None
    if result.get("toolName") == "research" and subject:
        return (
            f"I've started researching {subject}; it is running in the background. "
            "I'll follow up with what I find as soon as it's done."
        )
    return (
        f"The {result.get('toolName')} tool is running in the background; "
        "I'll follow up with its answer as soon as it finishes."
    )
