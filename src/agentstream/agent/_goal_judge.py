"""The default goal judge (Mastra's ``createGoalScorer``): one call to the judge model, answered in JSON.

The judge is asked ``Goal: …`` plus the latest user message and the assistant's latest answer, with
the JSON-schema instruction appended to that message (Mastra's prompt-injected structured output:
no ``response_format``, so any chat model can judge). While it answers, the ``reason`` it is
writing is read from the partial JSON and reported as activity; its decision maps to a score:
``done`` 1, ``continue`` 0, ``waiting`` `GOAL_SCORE_WAITING`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from .._abort import AbortSignal
from ..memory import Memory, MemoryScope
from ..models import CallOptions, LanguageModel
from ._convert import parse_partial_json

__all__ = [
    "DEFAULT_GOAL_JUDGE_PROMPT",
    "GOAL_SCORE_WAITING",
    "GoalJudgeError",
    "GoalScoreContext",
    "GoalScorer",
    "LLMGoalJudge",
    "judge_question",
]

GOAL_SCORE_WAITING = 0.5
"""The default judge's score for ``waiting`` (only this scorer's exact 0.5 means "wait for the user")."""

USER_MESSAGE_LIMIT = 4000
"""How much of the latest user message the judge is shown (characters)."""

_DECISION_SCORES = {"done": 1.0, "continue": 0.0, "waiting": GOAL_SCORE_WAITING}

JUDGE_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "enum": ["done", "continue", "waiting"],
            "description": "Whether the goal is done, should continue autonomously, or is at an "
            "explicit user checkpoint required by the goal",
        },
        "reason": {
            "type": "string",
            "description": "Brief explanation of what was accomplished or what remains to be done",
        },
    },
    "required": ["decision", "reason"],
    "additionalProperties": False,
}

JSON_INSTRUCTION = (
    "Return your response as JSON matching this schema:\n\n"
    + json.dumps(JUDGE_SCHEMA, separators=(",", ":"), ensure_ascii=False)
    + "\n\nReturn only valid JSON. Do not include markdown or explanatory text."
)

DEFAULT_GOAL_JUDGE_PROMPT = (
    "You are the goal judge. Your decision directly controls whether the assistant "
    "continues working toward the goal.\n\n"
    "Given a goal and the assistant's latest response, reason about whether the goal's "
    "requirements have been satisfied. Compare what the goal asks for against what the "
    "assistant has actually produced. Focus on substance, not phrasing.\n\n"
    'Use "done" when the goal is fully achieved.\n'
    'Use "waiting" when the goal explicitly requires a user checkpoint, user feedback, '
    "human verification, human confirmation, or another external event outside the "
    "goal-judge loop before the assistant should continue, and the assistant has correctly "
    "stopped at that checkpoint.\n"
    'Use "waiting" when the latest user message asks a question or requests clarification '
    "and the latest assistant message answers it; let the user acknowledge the answer, ask "
    "a follow-up, or otherwise return control before continuing goal work. Use common sense "
    "and do not wait if the user explicitly asked the assistant to continue autonomously "
    "after answering.\n"
    'Use "continue" when the goal is not done and the assistant should keep working '
    "autonomously, including when it asked for input that the goal did not explicitly "
    "require.\n"
    'If your previous decision was "waiting" for an explicit user checkpoint, keep choosing '
    '"waiting" when the user\'s latest response asks a question, requests clarification, or '
    "otherwise does not satisfy the checkpoint. Do not continue until the required user "
    "feedback/confirmation/verification has actually been provided.\n"
    "If the goal says to wait for the goal judge, judge, evaluator, or you to respond, "
    "approve, verify, validate, tell the assistant to continue, or otherwise provide the "
    "next signal, treat your own decision as that judge response. Verification can be "
    "performed by you unless the goal explicitly says it needs human/user verification. "
    'Choose "continue" when the assistant should proceed to the next step. Do not choose '
    '"waiting" for judge-controlled checkpoints, because that would mean waiting for '
    "yourself.\n\n"
    'Your "reason" field is sent back to the assistant as guidance when the goal is not yet '
    "done — be specific about what still needs to be accomplished. When choosing "
    '"continue", write the reason as an instruction for what the assistant should do next. '
    'When choosing "waiting", explain what specific user checkpoint is still outstanding.'
)


class GoalJudgeError(Exception):
    """The judge's answer was not the JSON it was asked for (the goal is paused with this reason)."""


@dataclass(frozen=True)
class GoalScoreContext:
    """What a goal scorer judges: the objective and the turn so far."""

    objective: str
    assistant_text: str
    """The assistant's latest answer (the text of the step just finished)."""
    user_text: str | None
    """The latest user message (``None``: the prompt had none)."""
    steps_since_user: int
    """Assistant steps since that user message (this run's steps so far)."""
    thread_id: str
    resource_id: str | None
    run_id: str
    abort_signal: AbortSignal


@runtime_checkable
class GoalScorer(Protocol):
    """A custom goal scorer (``goal={"scorer": ...}``), Mastra's ``MastraScorer`` as the goal uses it.

    ``run`` returns ``{"score": float, "reason": str | None}``: score 1 means the goal is done, any
    other score that the agent should keep working (only the built-in judge can answer "waiting").
    """

    id: str
    name: str

    async def run(self, context: GoalScoreContext) -> Mapping[str, Any]:
        """Score the latest answer: ``{"score": float, "reason": str | None}``."""
        ...


def judge_question(context: GoalScoreContext) -> str:
    """The text the judge is asked (``Goal: …``), exactly as Mastra words it."""
    text = f"Goal: {context.objective}"
    if context.user_text is not None:
        text += (
            f"\n\nLatest user message:\n{context.user_text[:USER_MESSAGE_LIMIT]}"
            f"\n\nAssistant steps since that user message: {context.steps_since_user}"
        )
    return text + f"\n\nLatest assistant message:\n{context.assistant_text}"


class LLMGoalJudge:
    """The built-in scorer (id ``goal-scorer``, name ``Goal (LLM)``): ``judge`` asked with ``prompt``.

    With ``memory`` (a `Memory` and the judge's own thread, Mastra's ``<threadId>-<goalId>``) the
    judge sees its earlier questions and verdicts on this goal, and each new exchange is stored.
    """

    id = "goal-scorer"
    name = "Goal (LLM)"

    def __init__(
        self,
        judge: LanguageModel,
        prompt: str,
        *,
        now_ms: Callable[[], float],
        memory: tuple[Memory, MemoryScope] | None = None,
    ) -> None:
        self.judge = judge
        self.prompt = prompt
        self.now_ms = now_ms
        self.memory = memory

    def question(self, context: GoalScoreContext) -> dict[str, Any]:
        """The user message asking the judge: the question, then the JSON instruction."""
        question = {
            "type": "text",
            "text": judge_question(context),
            "providerOptions": {"mastra": {"createdAt": int(self.now_ms())}},
        }
        return {"role": "user", "content": [question, {"type": "text", "text": JSON_INSTRUCTION}]}

    async def _history(self) -> list[dict[str, Any]]:
        if self.memory is None:
            return []
        memory, scope = self.memory
        return await memory.history(scope)

    async def _remember(self, question: dict[str, Any], answer: str) -> None:
        if self.memory is None:
            return
        from ..storage import MessageRecord  # memory's records (agent reaches storage through memory)

        memory, scope = self.memory
        at = datetime.fromtimestamp(self.now_ms() / 1000, tz=UTC)
        parts = [{"type": "text", "text": p["text"]} for p in question["content"]]
        common: dict[str, Any] = {
            "thread_id": scope.thread_id,
            "resource_id": scope.resource_id,
            "created_at": at,
        }
        await memory.save(
            [
                MessageRecord(
                    id=str(uuid.uuid4()), role="user", content={"format": 2, "parts": parts}, **common
                ),
                MessageRecord(
                    id=str(uuid.uuid4()),
                    role="assistant",
                    content={"format": 2, "parts": [{"type": "text", "text": answer}]},
                    **common,
                ),
            ]
        )

    async def stream(self, context: GoalScoreContext, verdict: dict[str, Any]) -> AsyncIterator[str]:
        """Ask the judge; yields the ``reason`` each time the partial answer's grows, then fills
        ``verdict`` with ``{"score", "reason", "decision"}``. Raises `GoalJudgeError` on a bad answer."""
        question = self.question(context)
        options: CallOptions = {
            "prompt": [{"role": "system", "content": self.prompt}, *await self._history(), question],
            "include_raw_chunks": False,
            "abort_signal": context.abort_signal,
        }
        text, shown = "", ""
        stream = self.judge.do_stream(options)
        try:
            async for part in stream:
                if part["type"] == "text-delta":
                    text += part["delta"]
                    reason = _partial_reason(text)
                    if reason and reason != shown:
                        shown = reason
                        yield reason
                elif part["type"] == "error":
                    raise GoalJudgeError(f"the judge model failed: {part.get('error')}")
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        decision, reason = parse_verdict(text)
        await self._remember(question, text)
        verdict.update(score=_DECISION_SCORES[decision], reason=reason, decision=decision)


def _partial_reason(text: str) -> str:
    ok, value = parse_partial_json(_strip_fence(text))
    if ok and isinstance(value, dict) and isinstance(value.get("reason"), str):
        return str(value["reason"])
    return ""


def _strip_fence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return stripped


def parse_verdict(text: str) -> tuple[str, str]:
    """``(decision, reason)`` from the judge's whole answer; `GoalJudgeError` says what was wrong."""
    try:
        value = json.loads(_strip_fence(text))
    except ValueError as exc:
        raise GoalJudgeError(f"the judge did not answer JSON ({exc}): {text[:200]!r}") from None
    if not isinstance(value, dict):
        raise GoalJudgeError(f"the judge answered {type(value).__name__}, expected an object: {text[:200]!r}")
    decision, reason = value.get("decision"), value.get("reason")
    if decision not in _DECISION_SCORES:
        raise GoalJudgeError(
            f"judge answer .decision: expected 'done', 'continue' or 'waiting', got {decision!r}"
        )
    if not isinstance(reason, str):
        raise GoalJudgeError(f"judge answer .reason: expected a string, got {reason!r}")
    return str(decision), reason
