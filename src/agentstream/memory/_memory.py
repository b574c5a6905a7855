"""``Memory``: conversation history in the storage's threads/messages domain (Mastra ``@mastra/memory``).

A run with ``memory={"thread": ..., "resource": ...}`` builds its prompt as Mastra does: the agent's
instructions, the working-memory instruction (``working_memory=``), matches from other threads of
the resource (``semantic_recall=``), then the thread's history (the last ``last_messages`` stored
messages merged with same-thread recall matches, in time order), then the new input. When the run
ends the turn is stored as ``MastraDBMessage`` records (content format 2): the new user message(s),
then one assistant message with the turn's parts (``step-start``, ``reasoning``, ``text``,
``tool-invocation``, non-transient ``data-*``). Embedding the new messages and generating the
thread title happen after the answer, off its critical path (``drain()`` waits for them).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from ..chunks import Chunk
from ..storage import MessageRecord, Storage, ThreadRecord
from ._embed import Embedder, as_embedder
from ._merge import merge_resumed
from ._recall import SemanticRecallConfig, index_name, message_text, remembered_block
from ._scope import MemoryScope
from ._threads import ThreadMethods
from ._title import TitleConfig, generate_title
from ._turn import TurnRecorder, db_messages_to_prompt
from ._vector import InMemoryVectorStore, VectorMatch, VectorStore
from ._working import WorkingMemoryConfig, tool_description, tool_input_schema
from ._working_methods import WorkingMemoryMethods
from ._working_tool import WORKING_MEMORY_TOOL, WORKING_MEMORY_TOOL_ID

__all__ = ["DEFAULT_LAST_MESSAGES", "Memory"]

log = logging.getLogger("agentstream.memory")

DEFAULT_LAST_MESSAGES = 10
"""Mastra ``Memory`` ``options.lastMessages`` default."""


def _check_last_messages(value: Any) -> int | bool | None:
    if value is False or value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"last_messages must be a non-negative int, None (all) or False (off), got {value!r}"
        )
    return value


class Memory(ThreadMethods, WorkingMemoryMethods):
    """Thread history, working memory, semantic recall and titles for an agent
    (``Agent(memory=Memory(...))``).

    ``storage`` defaults to the storage of the ``Mastra`` the agent is registered in.
    ``last_messages``: how many stored messages are loaded in front of the input (``None``: all;
    ``False``: history off — nothing loaded and nothing saved, as Mastra's ``lastMessages: false``).
    ``working_memory``: ``{"enabled", "scope", "template" | "schema", "read_only"}``.
    ``semantic_recall``: ``True`` or ``{"top_k", "message_range", "scope"}``; needs ``embedder``
    (an `Embedder` or a callable ``texts -> vectors``) and uses ``vector`` (a `VectorStore`,
    default: in process). ``generate_title``: ``True`` (the agent's model) or ``{"model": m,
    "instructions"?: str}``. ``clock``: milliseconds since the epoch (tests freeze it).
    """

    def __init__(
        self,
        storage: Storage | None = None,
        *,
        last_messages: int | bool | None = DEFAULT_LAST_MESSAGES,
        working_memory: Any = None,
        semantic_recall: Any = False,
        embedder: Any = None,
        vector: VectorStore | None = None,
        generate_title: Any = False,
        clock: Callable[[], float] | None = None,
    ):
        self.storage = storage
        self.last_messages = _check_last_messages(last_messages)
        self.working_memory = WorkingMemoryConfig.from_option(working_memory)
        self.semantic_recall = SemanticRecallConfig.from_option(semantic_recall)
        self.embedder: Embedder | None = as_embedder(embedder) if embedder is not None else None
        if self.semantic_recall.enabled and self.embedder is None:
            raise ValueError(
                "semantic_recall needs an embedder: Memory(embedder=HashEmbedder() | OpenAIEmbedder() | ...)"
            )
        self.vector: VectorStore = vector if vector is not None else InMemoryVectorStore()
        self.title = TitleConfig.from_option(generate_title)
        self.clock = clock
        # post-answer work (embeddings, titles) by resource: a turn waits only for its own user's
        self._pending: dict[str, set[asyncio.Task[None]]] = {}
        self._dimension: int | None = None
        self._bound: Memory | None = None

    def bound(self, storage: Storage) -> Memory:
        """This memory over ``storage`` when it has none of its own."""
        if self.storage is not None:
            return self
        cached = self._bound
        if cached is not None and cached.storage is storage:
            return cached  # one copy per storage: it keeps the probed vector dimension
        out = copy.copy(self)
        out.storage = storage
        out._bound = None
        self._bound = out
        return out

    def _store(self) -> Storage:
        if self.storage is None:
            raise RuntimeError(
                "this Memory has no storage: pass Memory(storage) or register the agent in a Mastra"
            )
        return self.storage

    def now(self) -> datetime:
        """The memory clock's current time (UTC)."""
        if self.clock is None:
            return datetime.now(UTC)
        return datetime.fromtimestamp(self.clock() / 1000, UTC)

    # ----------------------------------------------------------------------------- threads

    async def create_thread(
        self,
        *,
        resource_id: str,
        thread_id: str | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ThreadRecord:
        """A new thread (Mastra ``createThread``); ``metadata.workingMemory`` seeds thread-scoped
        working memory."""
        import uuid

        now = self.now()
        return await self._store().save_thread(
            ThreadRecord(
                id=thread_id or str(uuid.uuid4()),
                resource_id=resource_id,
                title=title,
                metadata=dict(metadata) if metadata is not None else None,
                created_at=now,
                updated_at=now,
            )
        )

    async def ensure_thread(self, scope: MemoryScope) -> ThreadRecord:
        """The scope's thread, created if missing; `ValueError` if it belongs to another resource."""
        store = self._store()
        found = await store.find_thread(scope.thread_id)
        if found is not None:
            if found.resource_id != scope.resource_id:
                raise ValueError(
                    f"thread {scope.thread_id!r} belongs to resource {found.resource_id!r}, "
                    f"not {scope.resource_id!r}"
                )
            return found
        now = self.now()
        return await store.save_thread(
            ThreadRecord(
                id=scope.thread_id,
                resource_id=scope.resource_id,
                title=scope.title,
                metadata=scope.metadata,
                created_at=now,
                updated_at=now,
            )
        )

    # ----------------------------------------------------------------------------- history

    def _window(self, scope: MemoryScope | None = None) -> int | bool | None:
        if scope is not None and "last_messages" in scope.options:
            return _check_last_messages(scope.options["last_messages"])
        return self.last_messages

    async def recall(self, scope: MemoryScope) -> list[MessageRecord]:
        """The thread's last ``last_messages`` stored messages (oldest first)."""
        await self.ensure_thread(scope)
        window = self._window(scope)
        if window is False or window == 0:
            return []
        page = await self._store().list_messages(
            scope.thread_id, last=None if window is None else int(window)
        )
        return list(page.messages)

    async def history(self, scope: MemoryScope) -> list[dict[str, Any]]:
        """``recall`` as V2 prompt messages."""
        return db_messages_to_prompt(await self.recall(scope))

    async def save(self, records: Sequence[MessageRecord]) -> None:
        """Store a turn's records after the thread's last message (timestamps kept strictly
        increasing, so that the chronological listing is the conversation order)."""
        if not records:
            return
        store = self._store()
        out: list[MessageRecord] = []
        last = await store.list_messages(records[0].thread_id, last=1)
        floor = last.messages[-1].created_at if last.messages else None
        for record in records:
            if floor is not None and record.created_at <= floor:
                record = msgspec.structs.replace(record, created_at=floor + timedelta(milliseconds=1))
            floor = record.created_at
            out.append(record)
        await store.save_messages(out)

    def list_tools(self) -> dict[str, dict[str, Any]]:
        """The memory's tools as Mastra's ``listTools`` describes them: name → ``{id, description,
        inputSchema}`` (``strict: False`` for a schema, whose tool input is not strict)."""
        config = self.working_memory
        if not config.enabled or config.read_only:
            return {}
        out: dict[str, Any] = {
            "id": WORKING_MEMORY_TOOL_ID,
            "description": tool_description(config),
            "inputSchema": tool_input_schema(config),
        }
        if config.schema is not None:
            out["strict"] = False
        return {WORKING_MEMORY_TOOL: out}

    def thread_config(self) -> dict[str, Any]:
        """The effective configuration in Mastra's ``getMergedThreadConfig`` shape."""
        recall = self.semantic_recall
        wm = self.working_memory
        working: dict[str, Any] = (
            {"enabled": wm.enabled, "scope": wm.scope} if wm.enabled else {"enabled": False}
        )
        if wm.schema is not None:
            working["schema"] = wm.schema
        else:
            working["template"] = wm.template_text()
        if wm.read_only:
            working["readOnly"] = True
        return {
            "lastMessages": self.last_messages if self.last_messages is not None else False,
            "semanticRecall": {
                "topK": recall.top_k,
                "messageRange": {"before": recall.before, "after": recall.after},
                "scope": recall.scope,
            }
            if recall.enabled
            else False,
            "generateTitle": self.title.enabled,
            "workingMemory": working,
        }

    async def recall_page(
        self, *, thread_id: str, resource_id: str, vector_search_string: str | None = None
    ) -> dict[str, Any]:
        """Mastra's ``recall({threadId, resourceId, vectorSearchString?})``: the history window
        (plus the semantic matches with their ranges), in time order, with its paging fields."""
        scope = MemoryScope(thread_id, resource_id)
        window = self._window()
        if window is False:
            return {"messages": [], "total": 0, "page": 0, "perPage": 0, "hasMore": False}
        store = self._store()
        known = await store.find_thread(thread_id) is not None  # a new thread: recall only
        every = list((await store.list_messages(thread_id)).messages) if known else []
        history = every if window is None else every[max(0, len(every) - int(window)) :] if window else []
        if vector_search_string and self.semantic_recall.enabled:
            matches = await self.search(scope, vector_search_string)
            merged = {r.id: r for r in [*await self._with_context(matches), *history]}
            history = sorted(merged.values(), key=lambda r: r.created_at)
        per_page = len(every) if window is None else int(window)
        return {
            "messages": history,
            "total": len(every),
            "page": 0,
            "perPage": per_page if window is not None else False,
            "hasMore": window is not None and len(every) > int(window),
        }

    # ----------------------------------------------------------------------------- semantic recall

    async def _ensure_index(self) -> str:
        if self._dimension is None:
            assert self.embedder is not None
            dimension = getattr(self.embedder, "dimension", None)
            if not isinstance(dimension, int):
                dimension = len((await self.embedder.embed(["a"]))[0])  # Mastra probes the same way
            await self.vector.create_index(index_name(dimension), dimension)
            self._dimension = dimension
        return index_name(self._dimension)

    async def search(
        self, scope: MemoryScope, text: str, *, vector: Sequence[float] | None = None
    ) -> list[VectorMatch]:
        """The ``top_k`` stored messages most similar to ``text`` in the recall scope."""
        config = self.semantic_recall
        assert self.embedder is not None
        index = await self._ensure_index()
        if vector is None:
            vector = (await self.embedder.embed([text]))[0]
        where = {"resource_id": scope.resource_id}  # a thread belongs to one resource: both narrow
        if config.scope == "thread":
            where["thread_id"] = scope.thread_id
        return await self.vector.query(index, vector, top_k=config.top_k, filter=where)

    async def _with_context(self, matches: Sequence[VectorMatch]) -> list[MessageRecord]:
        """Each match with ``message_range`` stored messages around it (same thread)."""
        store = self._store()
        config = self.semantic_recall
        by_thread: dict[str, list[MessageRecord]] = {}
        out: dict[str, MessageRecord] = {}
        for match in matches:
            thread_id = str(match.metadata.get("thread_id"))
            if thread_id not in by_thread:
                by_thread[thread_id] = list((await store.list_messages(thread_id)).messages)
            messages = by_thread[thread_id]
            at = next((i for i, m in enumerate(messages) if m.id == match.metadata.get("message_id")), None)
            if at is None:
                continue
            for record in messages[max(0, at - config.before) : at + config.after + 1]:
                out[record.id] = record
        return sorted(out.values(), key=lambda r: r.created_at)

    async def index_messages(
        self, records: Sequence[MessageRecord], known: Mapping[str, list[float]]
    ) -> None:
        """Embed ``records`` (reusing vectors already computed for the same text) and upsert them."""
        if self.embedder is None or not self.semantic_recall.enabled:
            return
        index = await self._ensure_index()
        todo = [r for r in records if message_text(r)]
        if not todo:
            return
        texts = [message_text(r) for r in todo]
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        vectors = dict(known)
        for text, vec in zip(missing, await self.embedder.embed(missing) if missing else [], strict=True):
            vectors[text] = vec
        await self.vector.upsert(
            index,
            [r.id for r in todo],
            [vectors[t] for t in texts],
            [
                {
                    "message_id": r.id,
                    "thread_id": r.thread_id,
                    "resource_id": r.resource_id,
                    "role": r.role,
                    "content": message_text(r),
                    "created_at": r.created_at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                }
                for r in todo
            ],
        )

    # ----------------------------------------------------------------------------- a run

    async def context(
        self, scope: MemoryScope, inputs: Sequence[Mapping[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, list[float]]]:
        """What a turn's prompt gets from memory: system messages (working memory, recall from
        other threads), the history messages, and the query vectors it computed (by text)."""
        await self.drain(scope.resource_id)  # this user's previous turn must be searchable
        thread = await self.ensure_thread(scope)
        system: list[dict[str, Any]] = []
        wm = await self.get_system_message(
            thread_id=thread.id, resource_id=scope.resource_id, read_only=scope.read_only
        )
        if wm is not None:
            system.append({"role": "system", "content": wm})
        history = await self.recall(scope)
        known: dict[str, list[float]] = {}
        query = " ".join(t for t in (_input_text(m) for m in inputs if m.get("role") == "user") if t)
        if self.semantic_recall.enabled and query:
            assert self.embedder is not None
            await self._ensure_index()
            known[query] = (await self.embedder.embed([query]))[0]
            matches = await self.search(scope, query, vector=known[query])
            recalled = await self._with_context(matches)
            here = [r for r in recalled if r.thread_id == scope.thread_id]
            other = [r for r in recalled if r.thread_id != scope.thread_id]
            if other:
                system.append({"role": "system", "content": remembered_block(other)})
            merged = {r.id: r for r in [*here, *history]}
            history = sorted(merged.values(), key=lambda r: r.created_at)
        messages = db_messages_to_prompt(history)
        if messages and messages[0].get("role") == "assistant":
            # a history that starts mid-exchange gets a placeholder user turn first, as in Mastra
            messages.insert(0, {"role": "user", "content": [{"type": "text", "text": "."}]})
        return system, messages, known

    def _after_turn(self, resource_id: str, task: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await task
            except Exception:
                # the answer is already out: a failed embedding or title is logged, not raised
                log.exception("memory: indexing or titling a finished turn failed")

        handle = asyncio.get_running_loop().create_task(run())
        tasks = self._pending.setdefault(resource_id, set())
        tasks.add(handle)
        handle.add_done_callback(tasks.discard)

    async def drain(self, resource_id: str | None = None) -> None:
        """Wait for the embeddings and titles of finished turns (they run after the answer)."""
        while True:
            if resource_id is None:
                waiting = [t for tasks in self._pending.values() for t in tasks]
            else:
                waiting = list(self._pending.get(resource_id, ()))
            if not waiting:
                return
            await asyncio.gather(*waiting, return_exceptions=True)

    async def remember(
        self,
        source: AsyncIterator[Chunk],
        scope: MemoryScope,
        prompt: list[dict[str, Any]],
        inputs: list[dict[str, Any]],
        *,
        message_id: str,
        input_ids: Sequence[str | None] = (),
        load: bool = True,
        model: Any = None,
        resumed: bool = False,
    ) -> AsyncIterator[Chunk]:
        """A run's chunks, with memory's part of the prompt (see the module docstring) put into
        ``prompt`` before the run starts and the turn (``inputs`` and the response) stored after.

        ``load=False``: the history is already in the prompt (an until-idle continuation); only the
        thread is ensured.

        The user's message(s) are stored when the turn is accepted, before its first chunk: an
        answered request never loses its input, even if the process dies mid-answer. The
        assistant's message is stored when the turn finishes (or stops for a human); an aborted or
        failed turn's partial answer is not (Mastra's default, ``persistPartialOnAbort: false``).
        A turn blocked by a tripwire takes its user message out again, so that a refused prompt
        never reaches the model through the history of the next turn
        (docs/decisions/issue-22-persistence.md). ``input_ids``: the id each input was sent with, which
        its stored message keeps (``None``: a new one). ``read_only`` turns and ``last_messages=False``
        store nothing (Mastra). ``updateWorkingMemory`` calls are not stored. ``resumed``: the leg
        that resumes a run stopped for a human; its answer is stored as the rest of the message
        the run stopped in (`merge_resumed`, as Mastra's message list merges it).
        """
        known: dict[str, list[float]] = {}
        if load:
            system, history, known = await self.context(scope, inputs)
            at = next((i for i, m in enumerate(prompt) if m.get("role") != "system"), len(prompt))
            prompt[at:at] = [*system, *history]
        else:
            await self.ensure_thread(scope)
        saving = not scope.read_only and self._window(scope) is not False
        recorder = TurnRecorder(scope, now_ms=self._now_ms, skip_tools={WORKING_MEMORY_TOOL})
        accepted = recorder.user_records(inputs, ids=input_ids) if saving else []
        await self.save(accepted)
        finished = broken = blocked = False
        try:
            async for chunk in source:
                recorder.observe(chunk)
                kind = getattr(chunk, "type", None)
                # a run that stops for a human is stored too: the leg that resumes it stores the rest
                finished = finished or kind in ("finish", "tool-call-approval", "tool-call-suspended")
                broken = broken or kind in ("abort", "error", "tripwire")
                blocked = blocked or kind == "tripwire"
                yield chunk
        finally:
            # also when the reader closes this source at its last chunk (a tripwire ends the run)
            if blocked and accepted:
                await self._store().delete_messages([record.id for record in accepted])
            elif finished and not broken and saving:
                answer = recorder.assistant_records(message_id=message_id)
                if resumed and not accepted:  # (new input in between: the answer comes after it)
                    continued = await merge_resumed(self._store(), answer)
                    if continued != answer:  # the stopped message, updated in place (its time kept)
                        await self._store().save_messages(continued)
                        answer = []
                    answer_ids = continued
                else:
                    answer_ids = answer
                await self.save(answer)
                self._after_turn(
                    scope.resource_id, self._finish_turn(scope, [*accepted, *answer_ids], known, model)
                )

    def _now_ms(self) -> int:
        return int(self.now().timestamp() * 1000)

    async def _finish_turn(
        self,
        scope: MemoryScope,
        records: Sequence[MessageRecord],
        known: Mapping[str, list[float]],
        model: Any,
    ) -> None:
        stored = [
            found
            for found in (await self._store().list_messages(scope.thread_id)).messages
            if found.id in {r.id for r in records}
        ]
        await self.index_messages(stored, known)
        if self.title.enabled:
            thread = await self._store().find_thread(scope.thread_id)
            title_model = self.title.model if self.title.model is not None else model
            if thread is not None and not thread.title and title_model is not None:
                title = await generate_title(title_model, self.title, stored, now_ms=self._now_ms())
                if title:
                    fresh = await self._store().get_thread(scope.thread_id)
                    await self._store().save_thread(msgspec.structs.replace(fresh, title=title))

    async def inject_result(
        self,
        scope: MemoryScope,
        *,
        tool_call_id: str,
        task_id: str,
        status: str,
        result: Any = None,
        error: str | None = None,
    ) -> bool:
        """Replace the stored invocation of a background tool call with its final outcome.

        Mastra's result injector: ``result`` for a completed task, ``"Background task failed: <msg>"``
        (``isError``) for a failed one; ``providerMetadata.mastra.backgroundTask`` gets the status.
        False if no stored message holds that call.
        """
        store = self._store()
        page = await store.list_messages(scope.thread_id)
        for record in reversed(page.messages):
            if record.role != "assistant":
                continue
            parts = record.content.get("parts")
            if not isinstance(parts, list):
                continue
            changed = False
            new_parts: list[Any] = []
            for part in parts:
                inv = part.get("toolInvocation") if isinstance(part, dict) else None
                if (
                    isinstance(part, dict)
                    and part.get("type") == "tool-invocation"
                    and isinstance(inv, dict)
                    and inv.get("toolCallId") == tool_call_id
                ):
                    inv = dict(inv)
                    if status == "completed":
                        inv.update(state="result", result=result)
                        inv.pop("isError", None)
                    elif status == "failed":
                        inv.update(state="result", result=f"Background task failed: {error}", isError=True)
                    part = {
                        **part,
                        "toolInvocation": inv,
                        "providerMetadata": {
                            "mastra": {"backgroundTask": {"taskId": task_id, "status": status}}
                        },
                    }
                    changed = True
                new_parts.append(part)
            if changed:
                content = dict(record.content)
                content["parts"] = new_parts
                await store.save_messages([msgspec.structs.replace(record, content=content)])
                return True
        return False


def _input_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""
