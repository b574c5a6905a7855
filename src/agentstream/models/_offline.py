"""The offline model (``"offline"``): your own agent, tools, memory and schemas without a key.

Unlike ``"demo"`` (the demo agent's scripted model), it knows nothing in advance: each call it reads
the call as a provider would see it and answers from that alone, deterministically:

* **Tools.** When the latest user message asks for one of the call's tools, by its name (``weather``,
  ``book_table`` as "book a table") or by two words of its description, it calls it, with arguments
  built from the tool's JSON Schema and the prompt (see ``_offline_values``). ``tool_choice``
  ``required`` or ``{"type": "tool"}`` forces a call, ``none`` forbids one.
* **Tool results.** The next call answers from the results (a tool's error, a declined approval
  and a background task's placeholder each get their own sentence).
* **Memory.** "What is my name?" is answered from an earlier "my name is Ada"; "what did I say
  before?" quotes the earlier user messages.
* **Structured output.** With ``response_format`` ``{"type": "json", "schema"}``, the text is a JSON
  value valid against the schema, filled from the prompt and the tool results.
* **Goal judge.** Asked as a goal judge, it gives the demo model's keyword verdict.

It streams like a provider: ``stream-start``, ``response-metadata``, word-sized ``text-delta``
parts (or ``tool-input-*`` deltas and a ``tool-call``), then ``finish`` with token usage (about four
characters a token) and the finish reason (``stop`` or ``tool-calls``). What it cannot do is listed
in docs/offline-model.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from .._abort import AbortError, AbortSignal, until_aborted
from ._base import CallOptions, FinishReason, StreamPart
from ._demo import _JUDGE_PROMPT_START, _verdict
from ._offline_values import STOPWORDS, Evidence, build_value, stem, words_of

__all__ = ["OfflineModel", "select_tools"]

_PLACEHOLDER = "Background task started. Task ID:"
_GENERIC = frozenset("get set do run make tool tools call fetch check create list".split())
_RECALL = re.compile(
    r"\b(?:before|earlier|previous(?:ly)?|last\s+time|remember|did\s+i\s+(?:say|ask|tell|write|mention)"
    r"|i\s+(?:said|asked|told\s+you))\b",
    re.I,
)
_MY_FACT = re.compile(r"\bmy\s+([a-z][\w ]{0,30}?)\s+(?:is|are|was)\s+([^.!?\n]+)", re.I)
_ASK_FACT = re.compile(
    r"\b(?:what(?:'s|\s+is|\s+are|\s+was)|do\s+you\s+know|tell\s+me)\s+my\s+([a-z][\w ]{0,30}?)\s*[?.!]*$",
    re.I,
)


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(
        p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text"
    )


def _user_texts(prompt: list[dict[str, Any]]) -> list[str]:
    return [t for t in (_text_of(m) for m in prompt if m.get("role") == "user") if t.strip()]


def _tool_results(prompt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool results after the last user message (what this call answers from)."""
    out: list[dict[str, Any]] = []
    for message in reversed(prompt):
        if message.get("role") == "user":
            break
        if message.get("role") == "tool":
            out[:0] = [p for p in message.get("content", []) if p.get("type") == "tool-result"]
    return out


def _score(tool: dict[str, Any], prompt_words: set[str], text: str) -> int:
    """How strongly the prompt asks for ``tool``: 10 for its whole name, 3 a name word, 1 a description
    word (2 for the description's first); under 2 is no call."""
    name = str(tool.get("name", ""))
    name_words = [w for w in words_of(name) if w not in _GENERIC and w not in ("agent", "workflow")]
    if re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", text, re.I) or (
        name_words and all(stem(w) in prompt_words for w in name_words)
    ):
        return 10
    score = 3 * sum(1 for w in name_words if stem(w) in prompt_words and len(w) > 2)
    words = [w for w in words_of(str(tool.get("description") or "")) if w not in STOPWORDS and len(w) > 2]
    described = {stem(w) for w in words}
    hits = len(described & prompt_words)
    # a description's first word is mostly its verb ("Send money.", "Search the archive."): asking
    # for that action is enough
    if words and stem(words[0]) in prompt_words:
        hits += 1
    return score + (hits if hits >= 2 or score else 0)


def select_tools(tools: list[dict[str, Any]], text: str, tool_choice: Any = None) -> list[dict[str, Any]]:
    """The tools ``text`` asks for, best first (``tool_choice`` as the call gives it)."""
    choice = tool_choice if isinstance(tool_choice, dict) else {"type": "auto"}
    functions = [t for t in tools if t.get("type", "function") == "function"]
    if choice.get("type") == "none" or not functions:
        return []
    if choice.get("type") == "tool":
        return [t for t in functions if t.get("name") == choice.get("toolName")][:1]
    prompt_words = {stem(w) for w in words_of(text) if w not in STOPWORDS}
    scored = sorted(
        ((s, i, t) for i, t in enumerate(functions) if (s := _score(t, prompt_words, text)) >= 2),
        key=lambda e: (-e[0], e[1]),
    )
    best = scored[0][0] if scored else 0
    # a clear winner is called alone; tools asked for as strongly as it are called with it
    chosen = [t for s, _, t in scored if s >= max(3, best) or (best < 10 and s == best)]
    if not chosen and choice.get("type") == "required":
        chosen = functions[:1]
    return chosen


def tool_arguments(tool: dict[str, Any], text: str) -> dict[str, Any]:
    """Arguments for ``tool`` built from its input schema and ``text``."""
    schema = tool.get("inputSchema") or {"type": "object"}
    skip = frozenset(words_of(str(tool.get("name", ""))))
    value = build_value(schema, Evidence(text, skip_words=skip), every_property=False)
    return value if isinstance(value, dict) else {}


def structured_value(schema: dict[str, Any], text: str, results: list[dict[str, Any]]) -> Any:
    """A value valid against ``schema``, from the prompt and the tool results' fields."""
    known: dict[str, Any] = {}
    for result in results:
        value = (result.get("output") or {}).get("value")
        if isinstance(value, dict):
            known.update({str(k).lower(): v for k, v in value.items()})
        args = result.get("input")
        if isinstance(args, dict):
            known.update({str(k).lower(): v for k, v in args.items() if str(k).lower() not in known})
    return build_value(schema, Evidence(text, known=known), every_property=True)


def _result_sentence(result: dict[str, Any]) -> str:
    name = result.get("toolName")
    output = result.get("output") or {}
    kind, value = output.get("type"), output.get("value")
    if isinstance(value, str) and value.startswith(_PLACEHOLDER):
        return (
            f"The {name} tool is running in the background; I'll follow up with its answer when it finishes."
        )
    if kind in ("error-text", "error-json"):
        return f"The {name} tool failed: {value if isinstance(value, str) else json.dumps(value)}."
    if isinstance(value, str) and "not approved" in value:
        return f"I did not run {name}: {value}."
    if isinstance(value, str):  # a text answer, or the reason a person gave for declining the call
        return f"The {name} tool answered: \u201c{value}\u201d."
    if isinstance(value, dict) and value:
        fields = ", ".join(f"{k} {json.dumps(v, ensure_ascii=False, default=str)}" for k, v in value.items())
        return f"The {name} tool returned {fields}."
    return f"The {name} tool returned {json.dumps(value, ensure_ascii=False, default=str)}."


def _recall(question: str, earlier: list[str]) -> str | None:
    """An answer from the conversation's earlier user messages, when the question asks for one."""
    asked = _ASK_FACT.search(question.strip())
    if asked:
        key = asked.group(1).strip().lower()
        for text in reversed(earlier):
            for m in _MY_FACT.finditer(text):
                if m.group(1).strip().lower() == key:
                    return f"Your {key} is {m.group(2).strip()}."
        if not _RECALL.search(question):
            return f"You have not told me your {key} in this conversation."
    if not _RECALL.search(question):
        return None
    if not earlier:
        return "This is the first message of our conversation, so there is nothing earlier to recall."
    quoted = "; then ".join(f"\u201c{t.strip()}\u201d" for t in earlier[-3:])
    return f"Earlier you said: {quoted}."


def answer(prompt: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """The text of a call that neither calls a tool nor must give JSON."""
    texts = _user_texts(prompt)
    question = texts[-1] if texts else ""
    results = _tool_results(prompt)
    if results:
        return " ".join(_result_sentence(r) for r in results)
    recalled = _recall(question, texts[:-1])
    if recalled is not None:
        return recalled
    names = ", ".join(str(t.get("name")) for t in tools if t.get("type", "function") == "function")
    offer = f" Ask for one of the tools by name ({names}) to see it called." if names else ""
    return (
        f"You said: \u201c{question.strip()}\u201d. I am the offline model: I can call this agent's tools, "
        f"recall this conversation and fill in a structured answer, but I know nothing myself.{offer}"
    )


def _pieces(text: str) -> list[str]:
    """Word-sized deltas, each with the whitespace after it (as providers mostly send them)."""
    return re.findall(r"\S+\s*|\s+", text)


class OfflineModel:
    """The offline model (``model="offline"``): no key, no network, deterministic.

    It calls the call's tools when the latest user message asks for them (by name or description,
    arguments built from each tool's JSON Schema and the prompt), answers from tool results,
    recalls earlier user messages, and answers ``response_format`` JSON with a value valid against
    the schema. What it can and cannot do: docs/offline-model.md. ``delay_ms``: the pause before
    each delta (0, the default: none).
    """

    specification_version = "v2"
    provider = "offline"

    def __init__(self, model_id: str = "offline", *, delay_ms: float = 0.0) -> None:
        if delay_ms < 0:
            raise ValueError(f"OfflineModel delay_ms must be 0 or more, got {delay_ms!r}")
        self.model_id = model_id or "offline"
        self.delay_ms = delay_ms

    def do_stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        """Stream this call's answer: a tool call, a JSON value or text, then ``finish``."""
        return self._stream(options)

    async def _pause(self, signal: AbortSignal | None) -> None:
        if signal is not None and signal.aborted:
            raise AbortError(signal.reason)
        if self.delay_ms > 0:
            await until_aborted(asyncio.sleep(self.delay_ms / 1000), signal)

    async def _stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        prompt = list(options.get("prompt", []))
        signal = options.get("abort_signal")
        tools = list(options.get("tools") or [])
        fmt = options.get("response_format") or {}
        digest = hashlib.sha256(json.dumps(prompt, sort_keys=True, default=str).encode()).hexdigest()
        yield {"type": "stream-start", "warnings": []}
        yield {
            "type": "response-metadata",
            "id": f"offline-{digest[:12]}",
            "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "modelId": self.model_id,
        }
        texts = _user_texts(prompt)
        question = texts[-1] if texts else ""
        results = _tool_results(prompt)
        calls = [] if results else select_tools(tools, question, options.get("tool_choice"))
        output = ""
        finish: FinishReason = "stop"
        if calls:
            for index, tool in enumerate(calls):
                call_id = f"call_{digest[index * 8 : index * 8 + 12]}"
                text = json.dumps(tool_arguments(tool, question), ensure_ascii=False)
                async for part in self._tool_call(call_id, str(tool["name"]), text, signal):
                    yield part
                output += text
            finish = "tool-calls"
        else:
            if (
                prompt
                and prompt[0].get("role") == "system"
                and _text_of(prompt[0]).startswith(_JUDGE_PROMPT_START)
            ):
                output = _verdict(prompt)
            elif fmt.get("type") == "json":
                value = structured_value(fmt.get("schema") or {}, question, results)
                output = json.dumps(value, ensure_ascii=False)
            else:
                output = answer(prompt, tools)
            yield {"type": "text-start", "id": "txt-0"}
            for piece in _pieces(output):
                await self._pause(signal)
                yield {"type": "text-delta", "id": "txt-0", "delta": piece}
            yield {"type": "text-end", "id": "txt-0"}
        inp = max(1, sum(len(json.dumps(m, default=str)) for m in prompt) // 4)
        out = max(1, len(output) // 4)
        yield {
            "type": "finish",
            "finishReason": finish,
            "usage": {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out},
        }

    async def _tool_call(
        self, call_id: str, name: str, text: str, signal: AbortSignal | None
    ) -> AsyncIterator[StreamPart]:
        yield {"type": "tool-input-start", "id": call_id, "toolName": name}
        for piece in re.findall(r"[^,:]+[,:]?\s*", text) or [text]:
            await self._pause(signal)
            yield {"type": "tool-input-delta", "id": call_id, "delta": piece}
        yield {"type": "tool-input-end", "id": call_id}
        yield {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": text}
