"""Goals (spec §6, ``@experimental`` in Mastra): an objective per thread, judged after every turn.

An agent with ``goal={"judge": model, ...}`` keeps, per memory thread, one objective record in the
storage's thread-state domain (key ``"goal"``, JSON exactly Mastra's ``GoalObjectiveRecord``). While
it is ``active``, every run on that thread is shown the objective, and after each answer the judge
decides: ``done`` ends the goal, ``continue`` sends the agent round again (``[Goal attempt N/M]``
with the judge's feedback), ``waiting`` hands control back to the user. A judge that fails, or a
spent budget of ``max_runs`` judged turns, pauses the goal (resume it with
``update_objective_options(status="active", max_runs=...)``).

`GoalHooks` is the loop seam (`StepDecision` from ``end_of_step``); the record is `_goal_record`,
the judge `_goal_judge`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from .._abort import AbortSignal
from ..chunks import Chunk, ChunkFrom, DataChunk, chunk_from_dict, format_date
from ..memory import Memory, MemoryScope
from ..models import LanguageModel
from ._goal_judge import (
    DEFAULT_GOAL_JUDGE_PROMPT,
    GOAL_SCORE_WAITING,
    GoalScoreContext,
    GoalScorer,
    LLMGoalJudge,
)
from ._goal_record import STATE_KEY, GoalObjective, GoalStatus, budget_reason, load_objective, save_objective
from ._hooks import ChainedHooks, LoopHooks, StepDecision, StepInfo

if TYPE_CHECKING:
    from ..storage import Storage

__all__ = ["DEFAULT_GOAL_MAX_RUNS", "GoalConfig", "GoalHooks"]

DEFAULT_GOAL_MAX_RUNS = 50
SCORER_TIMEOUT_S = 600.0
"""Mastra's completion-scorer timeout (600000 ms)."""
JudgeSpec = LanguageModel | str | Callable[[], LanguageModel | str | None]


@dataclass(frozen=True)
class GoalConfig:
    """``Agent(goal=...)`` (Mastra's ``GoalConfig``).

    - ``judge``: the judge model (a `LanguageModel`, a router string, or a function returning one or
      ``None``); an objective's ``judge_model_id`` is used when this is a string or absent;
    - ``max_runs``: judged turns before the goal pauses (default 50; an objective may set its own);
    - ``prompt``: the judge's instructions (default: Mastra's, decisions done / continue / waiting);
    - ``scorer``: a `GoalScorer` used instead of the model judge;
    - ``max_steps``: the judge's step budget (Mastra's ``maxSteps``). Mastra's judge takes more
      than one step only to call its read-only ``tools``; those are not supported here (``tools``
      is refused), so the judge answers in one model call, which any ``max_steps`` allows: the
      behaviour is Mastra's for a judge without tools, and a Mastra config ports unchanged.
    """

    judge: JudgeSpec | None = None
    max_runs: int | None = None
    prompt: str | None = None
    scorer: GoalScorer | None = None
    max_steps: int | None = None

    @classmethod
    def from_value(cls, value: GoalConfig | Mapping[str, Any]) -> GoalConfig:
        """Build from ``goal={...}``; unknown keys and bad values raise naming ``goal.<key>``."""
        if isinstance(value, GoalConfig):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"goal must be a dict or a GoalConfig, got {type(value).__name__}")
        known = {"judge", "max_runs", "prompt", "scorer", "max_steps"}
        if "tools" in value:
            raise TypeError(
                "goal.tools (read-only tools for the judge) is not supported: the built-in judge "
                "answers from the conversation in one model call; remove goal.tools, or give "
                "goal.scorer a scorer that checks what it needs"
            )
        unknown = set(value) - known
        if unknown:
            raise TypeError(
                f"unknown goal option(s): {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})"
            )
        for key in ("max_runs", "max_steps"):
            n = value.get(key)
            if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n <= 0):
                raise ValueError(f"goal.{key} must be a positive integer, got {n!r}")
        prompt = value.get("prompt")
        if prompt is not None and not isinstance(prompt, str):
            raise TypeError(f"goal.prompt must be a string, got {type(prompt).__name__}")
        scorer = value.get("scorer")
        if scorer is not None and not isinstance(scorer, GoalScorer):
            raise TypeError("goal.scorer must have id, name and an async run(context) method")
        judge = value.get("judge")
        if judge is not None and not (
            isinstance(judge, str) or callable(judge) or hasattr(judge, "do_stream")
        ):
            raise TypeError(
                f"goal.judge must be a LanguageModel, a model string or a function, got {judge!r}"
            )
        return cls(
            judge=judge,
            max_runs=value.get("max_runs"),
            prompt=prompt,
            scorer=scorer,
            max_steps=value.get("max_steps"),
        )

    def resolve_judge(self, record: GoalObjective) -> LanguageModel | None:
        """The judge for ``record``: a non-string ``judge`` wins over the record's ``judge_model_id``."""
        from ..models import resolve_model

        judge = self.judge
        if judge is not None and not isinstance(judge, str) and not hasattr(judge, "do_stream"):
            judge = judge()  # a function choosing the judge per run
        if judge is not None and not isinstance(judge, str):
            return judge  # type: ignore[return-value]
        spec = record.judge_model_id or judge
        return resolve_model(spec) if spec else None


# --------------------------------------------------------------------------------- the goal step


class _MessageClock:
    """Mastra's message list keeps ``createdAt`` strictly increasing (1 ms apart when the clock has
    not moved); the system-reminder signal carries the time the list gives it."""

    def __init__(self) -> None:
        self.last = -1

    def stamp(self, now: float) -> int:
        self.last = max(int(now), self.last + 1)
        return self.last


def _iso(ms: float) -> str:
    return format_date(datetime.fromtimestamp(ms / 1000, tz=UTC))


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return ""


class GoalHooks(ChainedHooks):
    """The goal step around ``inner`` (every other seam is ``inner``'s: `ChainedHooks`)."""

    def __init__(
        self,
        inner: LoopHooks,
        config: GoalConfig,
        storage: Storage,
        *,
        thread_id: str,
        resource_id: str | None,
        run_id: str,
        now_ms: Callable[[], float],
        signal: AbortSignal,
        resumed: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(inner)
        self.config = config
        self.storage = storage
        self.thread_id = thread_id
        self.resource_id = resource_id
        self.run_id = run_id
        self.now_ms = now_ms
        self.signal = signal
        self.clock = _MessageClock()
        self.start: list[Chunk] = []
        self.active_since = 0.0
        self.user_text: str | None = None
        self.steps = 0
        self.judging = False
        """The objective was active when the run started: its answers are judged."""
        self.resumed = resumed

    async def start_of_run(self) -> list[Chunk]:
        if self.resumed is not None:
            await self._resume(self.resumed)
        return [*await self.inner.start_of_run(), *self.start]

    async def _resume(self, loop: Mapping[str, Any]) -> None:
        """A leg resuming a suspended run (no input seam: the model saw the objective in the first
        leg, whose messages the snapshot kept): judged if the objective is still active. The time
        the run waited for a human is not counted as worked."""
        record = await load_objective(self.storage, self.thread_id)
        if record is None or record.status != "active" or self._scorer(record) is None:
            return
        self.judging = True
        self.active_since = self.now_ms()
        self.steps = len(loop.get("steps") or [])
        start = int(loop.get("firstNonSystem") or 0)
        users = list(loop.get("messages") or [])[start : start + int(loop.get("userCount") or 0)]
        texts = [_text_of(m) for m in users if m.get("role") == "user"]
        mine = [t for t in texts if not t.startswith(("<current-objective", "<system-reminder"))]
        self.user_text = mine[-1] if mine else None

    # -- the objective shown to the model
    async def process_input(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        messages = await self.inner.process_input(messages)
        now = self.now_ms()
        users = [m for m in messages if m.get("role") == "user"]
        self.user_text = _text_of(users[-1]) if users else None
        for m in messages:
            if m.get("role") != "system":
                self.clock.stamp(now)
        record = await load_objective(self.storage, self.thread_id)
        if record is None or record.status != "active" or self._scorer(record) is None:
            return messages
        self.start.append(self._state_signal(record, now))
        self.judging = True
        self.active_since = now
        self.clock.stamp(now)  # the signal, then the message the model is shown
        self.clock.stamp(now)
        text = f'<current-objective status="{record.status}">\n  {record.objective}\n</current-objective>'
        return [*messages, _user_message(text, now)]

    def _state_signal(self, record: GoalObjective, now: float) -> DataChunk:
        objective, status = record.objective, record.status
        return DataChunk(
            type="data-signal",
            data={
                "id": str(uuid.uuid4()),
                "type": "state",
                "tagName": "current-objective",
                "contents": f"\n  {objective}\n",
                "createdAt": _iso(now),
                "attributes": {"status": status},
                "metadata": {
                    "value": {"objective": record.to_json()},
                    "state": {
                        "id": STATE_KEY,
                        # Mastra's cache key: length-prefixed fields
                        "cacheKey": f"goal:{len(objective)}:{objective}{len(status)}:{status}",
                        "mode": "snapshot",
                        "threadId": self.thread_id,
                        "version": 1,
                    },
                },
            },
            transient=True,
        )

    def _scorer(self, record: GoalObjective) -> GoalScorer | LLMGoalJudge | None:
        if self.config.scorer is not None:
            return self.config.scorer
        judge = self.config.resolve_judge(record)
        if judge is None:
            return None
        prompt = record.prompt or self.config.prompt or DEFAULT_GOAL_JUDGE_PROMPT
        memory = None
        if self.resource_id is not None and record.id:
            scope = MemoryScope(f"{self.thread_id}-{record.id}", self.resource_id)
            memory = (Memory(self.storage), scope)
        return LLMGoalJudge(judge, prompt, now_ms=self.now_ms, memory=memory)

    # -- the judged step
    async def end_of_step(self, step: StepInfo) -> bool | StepDecision | None:
        inner = await self.inner.end_of_step(step)
        self.clock.stamp(self.now_ms())  # the step's response joins the message list
        self.steps += 1
        if step.errored or not self.judging:
            return inner
        decision = StepDecision()
        if isinstance(inner, StepDecision):
            # the inner decision (is-task-complete) is known once its chunks have streamed
            decision.chunks = self._after(inner, step, decision)
            return decision
        if step.is_continued if inner is None else inner:
            return inner  # mid tool loop, or continued by an inner hook: not judged yet
        decision.chunks = self._evaluate(step, decision)
        return decision

    async def _after(
        self, inner: StepDecision, step: StepInfo, decision: StepDecision
    ) -> AsyncIterator[Chunk]:
        async for chunk in _each(inner.chunks):
            yield chunk
        decision.messages.extend(inner.messages)
        decision.continue_ = inner.continue_
        if not (step.is_continued if inner.continue_ is None else inner.continue_):
            async for chunk in self._evaluate(step, decision):
                yield chunk

    async def _evaluate(self, step: StepInfo, decision: StepDecision) -> AsyncIterator[Chunk]:
        record = await load_objective(self.storage, self.thread_id)
        scorer = None if record is None or record.status != "active" else self._scorer(record)
        if record is None or scorer is None:
            return
        max_runs = record.max_runs or self.config.max_runs or DEFAULT_GOAL_MAX_RUNS
        if record.runs_used >= max_runs:
            yield await self._out_of_budget(record, max_runs)
            decision.continue_ = False
            return
        base = {"objective": record.objective, "iteration": record.runs_used + 1, "maxRuns": max_runs}
        pending = {
            **base,
            "passed": False,
            "status": record.status,
            "results": [],
            "duration": 0,
            "timedOut": False,
            "maxRunsReached": False,
            "suppressFeedback": True,
            "pending": True,
        }
        yield self._goal(pending)
        started = self.now_ms()
        result: dict[str, Any] = {}
        timed_out = False
        context = GoalScoreContext(
            objective=record.objective,
            assistant_text=step.text,
            user_text=self.user_text,
            steps_since_user=self.steps,
            thread_id=self.thread_id,
            resource_id=self.resource_id,
            run_id=self.run_id,
            abort_signal=self.signal,
        )
        try:
            async with asyncio.timeout(SCORER_TIMEOUT_S):
                if isinstance(scorer, LLMGoalJudge):
                    async for partial in scorer.stream(context, result):
                        yield self._goal({**pending, "activity": [{"type": "reason", "message": partial}]})
                else:
                    answer = await scorer.run(context)
                    said = answer.get("reason")
                    result.update(
                        score=_score(answer.get("score")), reason=said if isinstance(said, str) else None
                    )
        except TimeoutError:
            timed_out = True
            result = {"error": f"timed out after {int(SCORER_TIMEOUT_S * 1000)}ms"}
        except Exception as exc:
            if self.signal.aborted:
                return  # the run was aborted while judging: no verdict, the record is untouched
            result = {"error": str(exc) or type(exc).__name__}
        duration = round(self.now_ms() - started)
        async for chunk in self._verdict(record, scorer, result, base, duration, timed_out, decision):
            yield chunk

    async def _verdict(
        self,
        record: GoalObjective,
        scorer: GoalScorer | LLMGoalJudge,
        result: dict[str, Any],
        base: dict[str, Any],
        duration: int,
        timed_out: bool,
        decision: StepDecision,
    ) -> AsyncIterator[Chunk]:
        iteration, max_runs = base["iteration"], base["maxRuns"]
        judge_failed = "error" in result
        reason: str | None
        if judge_failed:
            reason = f"Goal evaluation failed: {result['error']}"
            scored = {"score": 0, "passed": False, "reason": reason, "errored": True}
        else:
            score, reason = result["score"], result.get("reason")
            scored = {"score": score, "passed": score >= 1}
            if reason is not None:
                scored["reason"] = reason
        scored.update(scorerId=scorer.id, scorerName=scorer.name, duration=duration)
        complete = not judge_failed and bool(scored["passed"])
        waiting = (
            isinstance(scorer, LLMGoalJudge)
            and not judge_failed
            and not complete
            and scored["score"] == GOAL_SCORE_WAITING
        )
        max_runs_reached = iteration >= max_runs and not waiting
        paused_reason: str | None = None
        if judge_failed:
            status: GoalStatus = "paused"
            paused_reason = reason
        elif complete:
            status = "done"
        elif waiting:
            status = "active"
        elif max_runs_reached:
            status, paused_reason = "paused", budget_reason(max_runs)
        else:
            status = "active"
        should_continue = not complete and not waiting and not judge_failed and not max_runs_reached
        now = self.now_ms()
        updated = msgspec.structs.replace(
            record,
            runs_used=iteration,
            status=status,
            paused_reason=paused_reason,
            updated_at=int(now),
            active_duration_ms=self._active_ms(record, now),
        )
        await save_objective(self.storage, self.thread_id, updated)
        final: dict[str, Any] = {**base, "passed": complete, "status": status}
        if paused_reason is not None:
            final["pausedReason"] = paused_reason
        final.update(
            judgeFailed=judge_failed,
            waitingForUser=waiting,
            results=[scored],
            reason=paused_reason if paused_reason is not None else reason,
            duration=duration,
            timedOut=timed_out,
            maxRunsReached=max_runs_reached,
            suppressFeedback=False,
            shouldContinue=should_continue,
        )
        if final["reason"] is None:
            del final["reason"]
        if should_continue:
            feedback = reason or "The goal is not yet complete."
            contents = (
                f"[Goal attempt {iteration}/{max_runs}] The goal is not yet complete. Judge feedback: "
                f"{feedback}\n\nContinue working toward the goal: {record.objective}"
            )
        else:
            contents = f"{status} ({iteration}/{max_runs})\n{final.get('reason', '')}"
        yield self._reminder(contents, final, now)
        if should_continue:
            self.clock.stamp(now)
            text = f'<system-reminder type="goal-judge">{contents}</system-reminder>'
            decision.messages.append(_user_message(text, now))
        yield self._goal(final)
        decision.continue_ = should_continue

    def _active_ms(self, record: GoalObjective, now: float) -> int:
        """``activeDurationMs``: the time this goal's runs spent working, up to ``now``."""
        elapsed, self.active_since = max(0.0, now - self.active_since), now
        return (record.active_duration_ms or 0) + round(elapsed)

    async def _out_of_budget(self, record: GoalObjective, max_runs: int) -> Chunk:
        reason = budget_reason(max_runs)
        now = self.now_ms()
        await save_objective(
            self.storage,
            self.thread_id,
            msgspec.structs.replace(
                record,
                status="paused",
                paused_reason=reason,
                updated_at=int(now),
                active_duration_ms=self._active_ms(record, now),
            ),
        )
        return self._goal(
            {
                "objective": record.objective,
                "iteration": record.runs_used,
                "maxRuns": max_runs,
                "passed": False,
                "status": "paused",
                "pausedReason": reason,
                "results": [],
                "reason": reason,
                "duration": 0,
                "timedOut": False,
                "maxRunsReached": True,
                "suppressFeedback": False,
                "shouldContinue": False,
            }
        )

    def _reminder(self, contents: str, evaluation: dict[str, Any], now: float) -> DataChunk:
        return DataChunk(
            type="data-signal",
            data={
                "id": str(uuid.uuid4()),
                "type": "reactive",
                "tagName": "system-reminder",
                "contents": contents,
                "createdAt": _iso(self.clock.stamp(now)),
                "acceptedAt": _iso(now),
                "attributes": {"type": "goal-judge"},
                "metadata": {"goalEvaluation": evaluation},
            },
            transient=True,
        )

    def _goal(self, payload: dict[str, Any]) -> Chunk:
        return chunk_from_dict(
            {"type": "goal", "runId": self.run_id, "from": ChunkFrom.AGENT.value, "payload": payload}
        )


def _score(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"the goal scorer's answer .score: expected a number, got {value!r}")
    return value


def _user_message(text: str, now: float) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": text, "providerOptions": {"mastra": {"createdAt": int(now)}}}],
    }


async def _each(chunks: Any) -> AsyncIterator[Chunk]:
    if hasattr(chunks, "__aiter__"):
        async for chunk in chunks:
            yield chunk
    else:
        for chunk in chunks:
            yield chunk
