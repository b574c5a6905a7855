"""``is_task_complete`` (Mastra's ``isTaskComplete``): scorers decide after each answer whether the
run is done, and their verdict is fed back to the model when it is not.

After a step that would end the run (not mid tool loop), every scorer is run (in parallel by default,
600 s overall); ``strategy="all"`` needs every scorer to pass (score 1), ``"any"`` one. The result is
streamed as an ``is-task-complete`` chunk. Not complete: the ``#### Completion Check Results``
feedback becomes an assistant message of the next call's prompt and the run continues (within
``max_steps``).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..chunks import Chunk, ChunkFrom, chunk_from_dict
from ._hooks import ChainedHooks, LoopHooks, StepDecision, StepInfo

__all__ = [
    "CompletionContext",
    "CompletionScorer",
    "IsTaskCompleteConfig",
    "IsTaskCompleteHooks",
    "completion_feedback",
]

DEFAULT_TIMEOUT_MS = 600_000


@dataclass(frozen=True)
class CompletionContext:
    """What a completion scorer sees (Mastra's ``StreamCompletionContext``)."""

    iteration: int
    max_iterations: int | None
    original_task: str
    """The first user message of the run."""
    current_text: str
    """The text of the step just finished."""
    tool_calls: list[dict[str, Any]]
    tool_results: list[dict[str, Any]]
    run_id: str
    agent_id: str
    thread_id: str | None = None
    resource_id: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)


@runtime_checkable
class CompletionScorer(Protocol):
    """A completion check: ``run`` returns ``{"score": 0 | 1, "reason": str | None}`` (score 1 passes).

    ``name`` (optional) is shown in the feedback; it defaults to ``id``.
    """

    id: str

    async def run(self, context: CompletionContext) -> Mapping[str, Any]:
        """Check the latest answer: ``{"score": 0 | 1, "reason": str | None}``."""
        ...


@dataclass(frozen=True)
class IsTaskCompleteConfig:
    """``is_task_complete={"scorers": [...], "strategy": "all" | "any", "timeout": ms, "parallel": bool,
    "on_complete": fn, "suppress_feedback": bool}``."""

    scorers: Sequence[CompletionScorer]
    strategy: Literal["all", "any"] = "all"
    timeout: float = DEFAULT_TIMEOUT_MS
    parallel: bool = True
    on_complete: Callable[[dict[str, Any]], Awaitable[None] | None] | None = None
    suppress_feedback: bool = False

    @classmethod
    def from_value(cls, value: IsTaskCompleteConfig | Mapping[str, Any]) -> IsTaskCompleteConfig:
        """Build from the option; unknown keys and bad values raise naming ``is_task_complete.<key>``."""
        if isinstance(value, IsTaskCompleteConfig):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"is_task_complete must be a dict, got {type(value).__name__}")
        known = {"scorers", "strategy", "timeout", "parallel", "on_complete", "suppress_feedback"}
        unknown = set(value) - known
        if unknown:
            raise TypeError(
                f"unknown is_task_complete option(s): {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})"
            )
        scorers = list(value.get("scorers") or [])
        for i, scorer in enumerate(scorers):
            if not isinstance(scorer, CompletionScorer):
                raise TypeError(
                    f"is_task_complete.scorers[{i}] must have an id and an async run(context) method"
                )
        strategy = value.get("strategy", "all")
        if strategy not in ("all", "any"):
            raise ValueError(f"is_task_complete.strategy must be 'all' or 'any', got {strategy!r}")
        timeout = value.get("timeout", DEFAULT_TIMEOUT_MS)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"is_task_complete.timeout must be a positive number of ms, got {timeout!r}")
        return cls(
            scorers=scorers,
            strategy=strategy,
            timeout=float(timeout),
            parallel=bool(value.get("parallel", True)),
            on_complete=value.get("on_complete"),
            suppress_feedback=bool(value.get("suppress_feedback", False)),
        )


def completion_feedback(result: Mapping[str, Any], max_iteration_reached: bool) -> str:
    """The ``#### Completion Check Results`` message the model is shown (Mastra's words)."""
    lines = [
        "#### Completion Check Results",
        "",
        f"Overall: {'✅ COMPLETE' if result['complete'] else '❌ NOT COMPLETE'}",
        f"Duration: {result['totalDuration']}ms",
    ]
    if result["timedOut"]:
        lines.append("⚠️ Scoring timed out")
    lines.append("")
    for scorer in result["scorers"]:
        lines.append(f"**{scorer['scorerName']}** ({scorer['scorerId']})")
        lines.append(f"Score: {scorer['score']} {'✅' if scorer['passed'] else '❌'}")
        if scorer.get("reason"):
            lines.append(f"Reason: {scorer['reason']}")
        lines.append("")
    if result["complete"]:
        lines.append("✅ The task is complete.")
    elif max_iteration_reached:
        lines.append("⚠️ Max iterations reached.")
    else:
        lines.append("🔄 The task is not yet complete. Please continue working based on the feedback above.")
    return "\n".join(lines)


class IsTaskCompleteHooks(ChainedHooks):
    """The is-task-complete step around ``inner`` (every other seam is ``inner``'s: `ChainedHooks`)."""

    def __init__(
        self,
        inner: LoopHooks,
        config: IsTaskCompleteConfig,
        *,
        run_id: str,
        agent_id: str,
        max_steps: int | None,
        now_ms: Callable[[], float],
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        super().__init__(inner)
        self.config = config
        self.run_id = run_id
        self.agent_id = agent_id
        self.max_steps = max_steps
        self.now_ms = now_ms
        self.thread_id = thread_id
        self.resource_id = resource_id
        self.task = "Unknown task"
        self.messages: list[dict[str, Any]] = []
        self.iteration = 0

    async def process_input(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        messages = await self.inner.process_input(messages)
        first = next((m for m in messages if m.get("role") == "user"), None)
        if first is not None:
            content = first.get("content")
            if isinstance(content, str):
                self.task = content
            elif isinstance(content, list) and content and content[0].get("type") == "text":
                self.task = str(content[0].get("text", ""))
        self.messages = messages
        return messages

    async def end_of_step(self, step: StepInfo) -> bool | StepDecision | None:
        inner = await self.inner.end_of_step(step)
        self.iteration += 1  # every step counts, judged or not (Mastra's iteration)
        if not self.config.scorers or step.errored or isinstance(inner, StepDecision):
            return inner
        if step.is_continued if inner is None else inner:
            return inner
        decision = StepDecision()
        decision.chunks = self._check(step, decision)
        return decision

    async def _check(self, step: StepInfo, decision: StepDecision) -> AsyncIterator[Chunk]:
        context = CompletionContext(
            iteration=self.iteration,
            max_iterations=self.max_steps,
            original_task=self.task,
            current_text=step.text,
            tool_calls=[{"name": c["toolName"], "args": c["args"]} for c in step.tool_calls],
            tool_results=[{"name": r["toolName"], "result": r["result"]} for r in step.tool_results],
            run_id=self.run_id,
            agent_id=self.agent_id,
            thread_id=self.thread_id,
            resource_id=self.resource_id,
            messages=list(self.messages),
        )
        result = await self._run_scorers(context)
        if self.config.on_complete is not None:
            done = self.config.on_complete(result)
            if inspect.isawaitable(done):
                await done
        reached = self.max_steps is not None and self.iteration >= self.max_steps
        if not result["complete"]:
            now = int(self.now_ms())
            decision.messages.append(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "text",
                            "text": completion_feedback(result, reached),
                            "providerOptions": {"mastra": {"createdAt": now}},
                        }
                    ],
                }
            )
        payload: dict[str, Any] = {
            "iteration": self.iteration,
            "passed": result["complete"],
            "results": result["scorers"],
            "duration": result["totalDuration"],
            "timedOut": result["timedOut"],
            "maxIterationReached": reached,
            "suppressFeedback": self.config.suppress_feedback,
        }
        if result.get("completionReason") is not None:
            payload["reason"] = result["completionReason"]
        yield chunk_from_dict(
            {
                "type": "is-task-complete",
                "runId": self.run_id,
                "from": ChunkFrom.AGENT.value,
                "payload": payload,
            }
        )
        decision.continue_ = not result["complete"]

    async def _run_scorers(self, context: CompletionContext) -> dict[str, Any]:
        config, started = self.config, self.now_ms()
        results: list[dict[str, Any] | None] = [None] * len(config.scorers)
        timed_out = False

        async def one(i: int, scorer: CompletionScorer) -> None:
            results[i] = await self._score(scorer, context)

        try:
            async with asyncio.timeout(config.timeout / 1000):
                if config.parallel:
                    async with asyncio.TaskGroup() as group:
                        for i, scorer in enumerate(config.scorers):
                            group.create_task(one(i, scorer))
                else:
                    for i, scorer in enumerate(config.scorers):
                        await one(i, scorer)
                        passed = bool(results[i] and results[i]["passed"])  # type: ignore[index]
                        if passed == (config.strategy == "any"):
                            break  # short-circuit: "all" failed, or "any" passed
        except TimeoutError:
            timed_out = True
        done = [r for r in results if r is not None]
        if config.strategy == "all":
            complete = len(done) == len(config.scorers) and all(r["passed"] for r in done)
        else:
            complete = any(r["passed"] for r in done)
        relevant = next((r for r in done if r["passed"]), done[0] if done else None)
        return {
            "complete": complete,
            "completionReason": relevant.get("reason") if relevant else None,
            "scorers": done,
            "totalDuration": round(self.now_ms() - started),
            "timedOut": timed_out,
        }

    async def _score(self, scorer: CompletionScorer, context: CompletionContext) -> dict[str, Any]:
        started = self.now_ms()
        name = getattr(scorer, "name", None) or scorer.id
        try:
            answer = await scorer.run(context)
            score = answer.get("score")
            score = score if isinstance(score, int | float) and not isinstance(score, bool) else 0
            reason = answer.get("reason")
        except Exception as exc:
            score, reason = 0, f"Scorer threw an error: {exc}"
        out: dict[str, Any] = {"score": score, "passed": score == 1}
        if isinstance(reason, str):
            out["reason"] = reason
        out.update(scorerId=scorer.id, scorerName=name, duration=round(self.now_ms() - started))
        return out
