"""Until-idle streams (Mastra ``stream(msgs, {untilIdle})``); dispatch itself is in ``_dispatch``.

``stream_until_idle``: one stream made of the first turn, every background-task chunk of the
agent/thread/resource and one continuation turn per batch of finished tasks (the conversation with
the real results swapped in, plus Mastra's directive as a system message that is not kept). It
closes when idle, on abort or after ``max_idle_ms`` without news between turns (any chunk of one of
its tasks is news, as in Mastra); closed before it is idle, it ends as `_idle_ending` says (a
``data-until-idle-closed`` chunk, then the last turn's ``finish`` again). ``await output.text``
is the text of every turn (what the user saw); each turn is in ``output.turns``; the other awaitables
describe the first turn, as in Mastra.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._abort import AbortSignal
from ..agent import Agent
from ..chunks import Chunk, StepFinish
from ..memory import Memory, MemoryScope, resolve_memory_option
from ..stream import Delayed, ModelOutput, UnresolvedResultError
from ._config import continuation_directive
from ._dispatch import AgentBackground
from ._idle_ending import StreamEnding, TaskSeen
from ._manager import BackgroundTaskManager

__all__ = ["UntilIdleOutput", "stream_until_idle"]

log = logging.getLogger("agentstream.background")

TERMINAL_BG_CHUNKS = frozenset(
    {
        "background-task-completed",
        "background-task-failed",
        "background-task-cancelled",
        "background-task-suspended",
    }
)
DEFAULT_MAX_IDLE_MS = 5 * 60_000


@dataclass
class _Scope:
    """Whose background tasks an until-idle stream follows.

    A memory thread (with its resource) is a conversation that may span requests: its tasks are
    followed whichever run dispatched them. Without a thread, only the tasks of this stream's own
    run id: matching by agent alone would hand one user's task chunks (and a continuation turn) to
    every other user of the same agent.
    """

    thread_id: str | None = None
    resource_id: str | None = None
    run_id: str | None = None

    def filters(self) -> dict[str, str | None]:
        if self.thread_id is not None:
            return {"thread_id": self.thread_id, "resource_id": self.resource_id}
        return {"run_id": self.run_id, "resource_id": self.resource_id}


def _model_output(result: Any) -> dict[str, Any]:
    if isinstance(result, str):
        return {"type": "text", "value": result}
    return {"type": "json", "value": result}


@dataclass
class _Outcome:
    kind: str
    task_id: str
    tool_call_id: str
    tool_name: str
    result: Any = None
    error: str | None = None


@dataclass
class _State:
    running: set[str] = field(default_factory=set)
    started_seen: set[str] = field(default_factory=set)
    held: dict[str, list[Chunk]] = field(default_factory=dict)
    pending: list[_Outcome] = field(default_factory=list)
    processed: set[str] = field(default_factory=set)
    outcomes: dict[str, _Outcome] = field(default_factory=dict)
    task_of_call: dict[str, str] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    processing: bool = False
    closed: bool = False


class UntilIdleOutput:
    """The first turn's ``ModelOutput`` whose ``full_stream`` is the combined stream.

    * `full_stream`: every turn's chunks and the background-task chunks, in order; each
      access replays the combined log from the start.
    * ``await output.text``: the text of every turn in order, turns separated by a blank line
      (``"\n\n"``), once the stream is idle; it raises if a turn failed or was cut off.
    * `turns`: the `ModelOutput` of each turn (the first, then one per continuation),
      growing as continuations start; ``await output.turns[i].text`` is one turn's text.
    * Every other attribute (``tool_calls``, ``usage``, ``get_full_output()``, ...) is the first
      turn's, as in Mastra.
    """

    def __init__(
        self,
        agent: Agent,
        manager: BackgroundTaskManager,
        first: ModelOutput,
        *,
        continuation_options: dict[str, Any],
        scope: _Scope,
        max_idle_ms: float,
        abort_signal: AbortSignal | None,
        memory: tuple[Memory, MemoryScope] | None = None,
        idle_sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.first = first
        self._idle_sleep = idle_sleep
        self._ending = StreamEnding()
        self._memory = memory
        self._agent = agent
        self._manager = manager
        self._options = continuation_options
        self._scope = scope
        self._max_idle_ms = max_idle_ms
        self._abort_signal = abort_signal
        self._log: list[Chunk] = []
        self._done = False
        self._changed = asyncio.Event()
        self._wake = asyncio.Event()
        self._state = _State()
        self._driver: asyncio.Task[None] | None = None
        self._turn: ModelOutput | None = None
        self.turns: list[ModelOutput] = [first]
        self._idle = asyncio.Event()
        self._text: Delayed[str] = Delayed(self._start_text)
        self._text_task: asyncio.Task[None] | None = None
        # continuation turns start in the context this stream was made in (as a plain run captures
        # it at stream()): a traced continuation nests under the same request or step as the first
        self._context = contextvars.copy_context()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.first, name)

    @property
    def full_stream(self) -> AsyncIterator[Chunk]:
        """The combined stream: the first turn, every background task's chunks, then the continuation turns.
        Each access replays from the start.
        """
        self._ensure_started()
        return self._follow()

    @property
    def text(self) -> Delayed[str]:
        """Awaitable: the text of every turn in order, separated by a blank line (see the class)."""
        return self._text

    def _start_text(self) -> None:
        self._ensure_started()
        if self._text_task is None:
            self._text_task = asyncio.get_running_loop().create_task(self._join_text())

    async def _join_text(self) -> None:
        try:
            await self._idle.wait()
            texts = [await turn.text for turn in self.turns]
        except asyncio.CancelledError:
            self._text.reject(UnresolvedResultError("the stream was cancelled before its text was known"))
            raise
        except Exception as exc:  # handed to whoever awaits ``text``
            self._text.reject(exc)
        else:
            self._text.resolve("\n\n".join(text for text in texts if text))

    async def consume_stream(self) -> None:
        """Read the combined stream to its end without keeping the chunks (the results stay awaitable)."""
        async for _ in self.full_stream:
            pass

    async def aclose(self) -> None:
        """Force-close: stop the current turn and the background subscription (tasks keep running)."""
        self._force_close()
        if self._driver is not None:
            await asyncio.gather(self._driver, return_exceptions=True)

    # --------------------------------------------------------------------------- plumbing

    def _ensure_started(self) -> None:
        if self._driver is None:
            self._driver = asyncio.get_running_loop().create_task(
                self._drive(), name="agentstream-until-idle", context=self._context
            )

    async def _follow(self) -> AsyncIterator[Chunk]:
        i = 0
        while True:
            while i < len(self._log):
                yield self._log[i]
                i += 1
            if self._done:
                return
            event = self._changed
            await event.wait()

    def _append(self, chunk: Chunk) -> None:
        self._ending.saw(chunk)
        self._log.append(chunk)
        self._changed.set()
        self._changed = asyncio.Event()

    def _force_close(self) -> None:
        st = self._state
        if st.closed:
            return
        st.closed = True
        for chunks in st.held.values():
            for chunk in chunks:
                self._append(chunk)
        st.held.clear()
        self._wake.set()

    def _on_abort(self, _reason: object) -> None:
        # A turn in flight got the same signal and ends itself with `abort` and `finish`, which the
        # stream must carry (as a plain run's does): `_drive` closes once it has; only a wait
        # between turns is cut short here.
        if not self._state.processing:
            self._ending.reason = "aborted"
            self._force_close()

    def _on_bg(self, chunk: Any) -> None:
        st = self._state
        if st.closed:
            return
        payload = chunk.payload
        task_id: str = payload.task_id
        kind: str = chunk.type
        if kind in TERMINAL_BG_CHUNKS:
            key = f"{task_id}:{kind}"
            if key in st.processed:
                return
            st.processed.add(key)
        self._wake.set()  # news: the idle window starts again
        if kind in ("background-task-running", "background-task-resumed"):
            st.running.add(task_id)
            seen = self._ending.tasks.setdefault(task_id, TaskSeen(payload.tool_name, payload.tool_call_id))
            seen.running = True
        elif kind in TERMINAL_BG_CHUNKS:
            st.running.discard(task_id)
            self._ending.tasks.pop(task_id, None)
            self._ending.ended.add(task_id)
            outcome = _Outcome(
                kind.removeprefix("background-task-"), task_id, payload.tool_call_id, payload.tool_name
            )
            if kind == "background-task-completed":
                outcome.result = payload.result
            elif kind == "background-task-failed":
                outcome.error = str(payload.error.get("message", ""))
            st.pending.append(outcome)
            st.outcomes[payload.tool_call_id] = outcome
            st.task_of_call[payload.tool_call_id] = task_id
            self._wake.set()
        # keep causal order: a task of this run is announced (background-task-started) first
        if payload.run_id == self._options.get("run_id") and task_id not in st.started_seen:
            st.held.setdefault(task_id, []).append(chunk)
            return
        self._append(chunk)

    async def _pipe(self, turn: ModelOutput) -> None:
        st = self._state
        self._turn = turn
        st.processing = True
        try:
            async for chunk in turn.full_stream:
                if st.closed:
                    break
                self._append(chunk)
                if chunk.type == "background-task-started":
                    task_id = chunk.payload.task_id  # type: ignore[union-attr]
                    st.running.add(task_id)
                    st.started_seen.add(task_id)
                    st.task_of_call[chunk.payload.tool_call_id] = task_id  # type: ignore[union-attr]
                    if task_id not in self._ending.ended:
                        self._ending.tasks.setdefault(
                            task_id,
                            TaskSeen(chunk.payload.tool_name, chunk.payload.tool_call_id),  # type: ignore[union-attr]
                        )
                    for held in st.held.pop(task_id, []):
                        self._append(held)
                elif isinstance(chunk, StepFinish):
                    messages = chunk.payload.messages
                    if isinstance(messages, Mapping) and isinstance(messages.get("all"), list):
                        st.history = list(messages["all"])
        finally:
            st.processing = False
            self._turn = None
            if st.closed:
                await turn.aclose()

    async def _drive(self) -> None:
        st = self._state
        unsubscribe = self._manager.subscribe(self._on_bg, agent_id=self._agent.id, **self._scope.filters())
        remove_abort = self._abort_signal.add_listener(self._on_abort) if self._abort_signal else None
        try:
            turn: ModelOutput | None = self.first
            while turn is not None and not st.closed:
                await self._pipe(turn)
                turn = None
                if self._abort_signal is not None and self._abort_signal.aborted:
                    self._ending.reason = "aborted"
                    self._force_close()
                while not st.closed:
                    if st.pending:
                        batch, st.pending = st.pending, []
                        await self._inject(batch)
                        turn = self._agent._stream_turn(
                            self._continuation_messages(batch),
                            self._options,
                            continuation=True,
                            background=AgentBackground(self._manager, wait_for_tasks=False),
                            background_scope=(self._scope.thread_id, self._scope.resource_id),
                        )
                        self.turns.append(turn)
                        break
                    if not st.running:
                        self._force_close()
                        break
                    self._wake.clear()
                    if not await self._news_within_window():
                        self._ending.reason = self._ending.reason or "idle-timeout"
                        self._force_close()
        except BaseException as exc:
            self._force_close()
            if not isinstance(exc, asyncio.CancelledError):
                # reported in the stream (its last chunk is an `error` that says so) and logged here
                self._ending.failure = exc
                log.error("until-idle stream failed", exc_info=exc)
        finally:
            unsubscribe()
            if remove_abort is not None:
                remove_abort()
            if st.pending:  # closed with results no turn saw: still store them in the thread
                batch, st.pending = st.pending, []
                await asyncio.shield(self._inject(batch))
            self._end()
            self._done = True
            self._changed.set()
            self._idle.set()

    async def _news_within_window(self) -> bool:
        """Wait for news of a task; ``False`` when the idle window (``max_idle_ms``) passed without any."""
        news = asyncio.ensure_future(self._wake.wait())
        window = asyncio.ensure_future(self._idle_sleep(self._max_idle_ms / 1000))
        try:
            done, _ = await asyncio.wait({news, window}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            news.cancel()
            window.cancel()
        if news in done:
            return True
        window.result()  # a window that failed fails the stream (it ends with an error that says so)
        return False

    def _end(self) -> None:
        """Append the stream's explicit end when it closed before it was idle (see `_idle_ending`)."""
        queue = {task_id: self._manager.queue_position(task_id) for task_id in self._ending.tasks}
        for chunk in self._ending.chunks(max_idle_ms=self._max_idle_ms, queue=queue):
            self._log.append(chunk)

    async def _inject(self, batch: list[_Outcome]) -> None:
        """Mastra's result injector, for the thread in memory: the stored placeholder invocation
        becomes the task's result (completed) or error (failed)."""
        if self._memory is None:
            return
        memory, scope = self._memory
        for outcome in batch:
            if outcome.kind not in ("completed", "failed", "cancelled"):
                continue
            try:
                await memory.inject_result(
                    scope,
                    tool_call_id=outcome.tool_call_id,
                    task_id=outcome.task_id,
                    status=outcome.kind,
                    result=outcome.result,
                    error=outcome.error,
                )
            except Exception:  # pragma: no cover - storage failure must not break the stream
                log.exception("could not store the result of background task %s", outcome.task_id)

    def _continuation_messages(self, batch: list[_Outcome]) -> list[dict[str, Any]]:
        st = self._state
        directive = continuation_directive(
            (o.kind, o.tool_call_id, o.tool_name, o.task_id)  # type: ignore[misc]
            for o in batch
        )
        history = copy.deepcopy(st.history)
        for message in history:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for part in content:
                if not isinstance(part, dict) or part.get("type") not in ("tool-call", "tool-result"):
                    continue
                call_id = part.get("toolCallId")
                task_id = st.task_of_call.get(str(call_id))
                if task_id is None:
                    continue
                outcome = st.outcomes.get(str(call_id))
                status = "running" if outcome is None else outcome.kind
                mastra: dict[str, Any] = {"backgroundTask": {"taskId": task_id, "status": status}}
                if outcome is not None and outcome.kind in ("completed", "failed"):
                    mastra["modelOutput"] = None
                    if part["type"] == "tool-result":
                        part["output"] = (
                            _model_output(outcome.result)
                            if outcome.kind == "completed"
                            else {"type": "error-text", "value": f"Background task failed: {outcome.error}"}
                        )
                part["providerOptions"] = {"mastra": mastra}
        return [{"role": "system", "content": directive}, *history]


def stream_until_idle(
    agent: Agent,
    messages: Any,
    *,
    manager: BackgroundTaskManager,
    max_idle_ms: float | None = None,
    thread_id: str | None = None,
    resource_id: str | None = None,
    abort_signal: AbortSignal | None = None,
    idle_sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    **options: Any,
) -> UntilIdleOutput:
    """``agent.stream(messages, until_idle=True | {"max_idle_ms": n})`` (Mastra ``untilIdle``).

    ``thread_id`` / ``resource_id`` scope the background tasks; they default to the
    ``memory={"thread", "resource"}`` option, which also loads/stores the conversation
    (continuation turns and injected results included). Continuation turns reuse the run id and
    drop ``on_finish``. ``idle_sleep(seconds)`` times the idle window (injectable for fake time).
    """
    options = agent.merged_options(options)  # once for every turn: continuations drop on_finish
    remembered: tuple[Memory, MemoryScope] | None = None
    if options.get("memory") is not None:
        mscope = resolve_memory_option(options["memory"])
        remembered = (agent._memory_for_run(), mscope)
        thread_id = thread_id or mscope.thread_id
        resource_id = resource_id or mscope.resource_id
    run_id = str(options.get("run_id") or uuid.uuid4())
    first_options = {**options, "run_id": run_id}
    if abort_signal is not None:
        first_options["abort_signal"] = abort_signal
    continuation = {k: v for k, v in first_options.items() if k != "on_finish"}
    scope = _Scope(thread_id, resource_id, run_id)
    first = agent._stream_turn(
        messages,
        first_options,
        background=AgentBackground(manager, wait_for_tasks=False),
        background_scope=(thread_id, resource_id),
    )
    return UntilIdleOutput(
        agent,
        manager,
        first,
        continuation_options=continuation,
        scope=scope,
        max_idle_ms=DEFAULT_MAX_IDLE_MS if max_idle_ms is None else max_idle_ms,
        abort_signal=abort_signal,
        memory=remembered,
        idle_sleep=idle_sleep,
    )
