"""`Jobs`: the one job service for every answer written into a stream store, whatever produces it.

A job is one answer: a chat turn, or one leg of a workflow run (its start, or a resume). Every
kind goes through the same steps, here and nowhere else:

* **claim**: the answer's stream is started under its key (`Jobs.claim`); a claim no answer will
  be written to is released (`Jobs.release`);
* **produce → write → finish**: the producer's UI chunks are written positionally from chunk 0,
  in batches, under a writer lease, then the stream is finished, or ended with an ``error`` chunk
  when the store failed (`write_job`). In this process (`Jobs.run_here`, in a task of its own, so
  a client that goes away does not stop the answer) or on a worker (the worker calls `write_job`
  through ``run_chat_turn`` / ``run_workflow_job``; the server hands the job over with
  `Jobs.hand_off`);
* **follow**: the answer is a reader of the stream (`Jobs.follow`), which tells the client with an
  ``error`` chunk when the writer died or the store failed;
* **cancel**: `Jobs.cancel` aborts a job running here, or has the runner cancel it on its worker,
  waits for the stream to end, and ends a stream nobody will end (a job that never started, a
  dead worker) with the kind's cancelled ending.

What differs between kinds is the producer (the chunks), the key and the endings: parameters of
these calls, not copies of them. A `Jobs` holds the jobs running in this process; the app owns one
(``create_app``) and hands it to every route that shares its store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..resumable import (
    IN_PROCESS_LEASE_S,
    RedisStreamSink,
    StreamExpiredError,
    StreamLostError,
    StreamStore,
    StreamStoreUnavailableError,
    batched_sink,
    in_process_appender,
    read_checked,
    writing,
)
from ._sse import StoredUIChunk, encode_ui_chunk

__all__ = [
    "ANSWER_LOST",
    "DEFAULT_STOP_TIMEOUT_S",
    "STORE_FAILED",
    "STORE_UNAVAILABLE",
    "JobCanceller",
    "Jobs",
    "LocalJob",
    "end_cancelled",
    "end_with_error",
    "ends_within",
    "write_chunks",
    "write_job",
]

logger = logging.getLogger("agentstream.ai_sdk")

STORE_FAILED = "the answer was interrupted: the server could not record it (details are in the server log)"
"""The ``errorText`` of an answer whose recording failed (the stream store refused or lost it)."""
ANSWER_LOST = "the answer was lost: the process writing it stopped before it finished (ask again)"
"""The ``errorText`` a reader sends when the stream ends unfinished (its writer died, or it was lost)."""
STORE_UNAVAILABLE = "the answer was interrupted: the server's stream store is unreachable (try again shortly)"
"""The ``errorText`` a reader sends when the stream store fails past its retries."""

# How long a stop or cancel waits for a worker to end the stream: its cancel poll (0.5 s) and a
# run's cancel grace (2 s by default) with room; past it the server ends the stream itself.
DEFAULT_STOP_TIMEOUT_S = 10.0


@runtime_checkable
class JobCanceller(Protocol):
    """What `Jobs.cancel` needs of a runner (``ChatRunner``, ``WorkflowRunner``)."""

    async def cancel(self, stream_id: str) -> bool:
        """Stop the job writing ``stream_id``; whether it had started (one that had ends its stream)."""
        ...


# --- writing one job's stream -------------------------------------------------------------------


async def write_chunks(store: StreamStore, stream_id: str, chunks: AsyncIterator[Any], *, at: int = 0) -> int:
    """Write the UI chunks as they come, chunk *i* at number ``at + i`` (numbers already written
    are skipped); those produced while a write is in flight go in the next one (one round trip to
    Redis per batch, not per chunk). Returns how many chunks were produced.

    A store in this process (`in_process_appender`) is written as each chunk comes, in the
    producer's task: a second task woken per chunk (what batching needs) would cost more than the
    write itself, which is a list append."""
    append_now = in_process_appender(store)
    if append_now is not None:
        written = at
        async for chunk in chunks:
            append_now(stream_id, encode_ui_chunk(chunk), at=written)
            written += 1
        return written - at
    open_sink = batched_sink(store)
    if open_sink is not None:
        return await _write_to_sink(await open_sink(stream_id, at=at), chunks)
    pending: list[bytes] = []
    ready = asyncio.Event()
    ended = False
    written = at

    async def pull() -> None:
        nonlocal ended
        try:
            async for chunk in chunks:
                pending.append(encode_ui_chunk(chunk))
                ready.set()
        finally:
            ended = True
            ready.set()

    async def push() -> None:
        nonlocal written
        while True:
            await ready.wait()
            ready.clear()
            if pending:
                batch = pending.copy()
                pending.clear()
                await store.append(stream_id, *batch, at=written)
                written += len(batch)
            if ended and not pending:
                return

    async with asyncio.TaskGroup() as group:
        group.create_task(pull())
        group.create_task(push())
    return written - at


async def _write_to_sink(sink: RedisStreamSink, chunks: AsyncIterator[Any]) -> int:
    """`write_chunks` into a Redis store's `RedisStreamSink`: each chunk is added as it is produced, in the
    producer's task, and the store's one writer sends every stream's chunks of a loop iteration in
    one call (no second task per stream woken per chunk). The producing runs in a task of its own so
    that a failed write stops it at once, wherever it waits, as the two tasks did."""
    produced = 0

    async def pull() -> None:
        nonlocal produced
        async for chunk in chunks:
            sink.add(encode_ui_chunk(chunk))
            produced += 1
        await sink.drain()

    task = asyncio.create_task(pull())
    sink.on_failure = task.cancel
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if sink.error is None or (current is not None and current.cancelling()):
            raise
        raise sink.error from None
    finally:
        sink.close()
    return produced


def _only_expired(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_expired(inner) for inner in exc.exceptions)
    return isinstance(exc, StreamExpiredError)


def _first(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def write_job(
    store: StreamStore,
    stream_id: str,
    chunks: AsyncIterator[Any],
    *,
    lease_s: float,
    on_worker: bool,
    stop: Callable[[], object] | None = None,
    what: str = "answer",
) -> bool:
    """Produce → write → finish: write ``chunks`` to ``stream_id`` positionally from chunk 0 (a
    re-run after a crash writes none twice) holding the writer lease (``lease_s``: the readers of
    a writer that dies end within seconds), then finish the stream. Returns whether the stream was
    still there (``False``: it finished or expired meanwhile, another writer completed it or the
    chat moved on; the producing stops quietly, ``stop()`` is called).

    A store failure (past its retries, or chunks lost) stops the producing (``stop()``) and ends
    the stream with an ``error`` chunk (`STORE_FAILED`); when even that cannot be written the
    failure propagates, the stream is left open and its readers end when the lease runs out.
    ``on_worker``: cancelling this task (a worker shutting down) leaves the stream as it is, for the
    durable runner to run the job again elsewhere; in the process that was asked (``False``) a
    cancelled job (a server shutting down) still finishes its stream, for its readers."""
    async with writing(store, stream_id, lease_s=lease_s, dead_on_error=not on_worker):
        failed = False
        try:
            try:
                await write_chunks(store, stream_id, chunks)
            finally:
                with contextlib.suppress(Exception):
                    await chunks.aclose()  # type: ignore[attr-defined]
        except Exception as exc:
            if stop is not None:
                stop()
            if _only_expired(exc):
                logger.info("stream %s finished or expired before this %s did; stopped", stream_id, what)
                return False
            logger.error("%s %s failed while writing its stream", what, stream_id, exc_info=_first(exc))
            failed = True
        except BaseException:
            if on_worker:
                raise
            await asyncio.shield(store.finish(stream_id))  # readers must still see the end
            raise
        # Shielded: at shutdown the task is cancelled, and readers must still see the end.
        await asyncio.shield(
            end_with_error(store, stream_id, STORE_FAILED) if failed else store.finish(stream_id)
        )
    return True


async def end_cancelled(store: StreamStore, stream_id: str, *ending: Mapping[str, Any]) -> None:
    """End the stream of a job cancelled before it started (no process will ever write it):
    ``start`` (unless a chunk is there already, from an attempt before a crash), the ``ending``
    chunks, and the end. Written at the stream's length: nothing else writes it any more."""
    written = await store.length(stream_id)
    # No chunks at all (a kind whose wire has no ``start``, Mastra's workflow chunks): just the end.
    chunks = ([] if written or not ending else [{"type": "start"}]) + list(ending)
    try:
        if chunks:
            await store.append(stream_id, *(encode_ui_chunk(chunk) for chunk in chunks), at=written)
        await store.finish(stream_id)
    except StreamExpiredError:
        logger.info("stream %s finished or expired before its cancelled run was ended", stream_id)


async def end_with_error(store: StreamStore, stream_id: str, error_text: str) -> None:
    """End a stream whose writer cannot go on: an ``error`` chunk (after a ``start`` if the stream
    has no chunk yet), then the end, so its readers are told instead of left waiting. Written at
    the stream's length (safe to retry); a stream already finished or gone is left as it is."""
    try:
        written = await store.length(stream_id)
        chunks = ([] if written else [{"type": "start"}]) + [{"type": "error", "errorText": error_text}]
        await store.append(stream_id, *(encode_ui_chunk(chunk) for chunk in chunks), at=written)
        await store.finish(stream_id)
    except StreamExpiredError:
        logger.info("stream %s finished or expired before it could be ended with an error", stream_id)


async def ends_within(store: StreamStore, stream_id: str, timeout_s: float) -> bool:
    """Whether the stream finishes (or is gone) within ``timeout_s``."""
    try:
        async with asyncio.timeout(timeout_s):
            chunks = store.read(stream_id, after=await store.length(stream_id))
            async with contextlib.aclosing(chunks):  # type: ignore[type-var]
                async for _ in chunks:
                    pass
    except TimeoutError:
        return False
    except StreamExpiredError:
        pass
    return True


# --- the service ----------------------------------------------------------------------------------


@dataclass
class LocalJob:
    """A job running in this process: the stream it writes (``None``: not recorded), how to abort
    it at once, and what it runs (a workflow ``Run``, for the cancel route's checks)."""

    stream_id: str | None
    abort: Callable[[], object]
    subject: Any = None
    writer: asyncio.Task[None] | None = None
    """The task writing its stream (`Jobs.run_here`)."""


_SHARED: weakref.WeakKeyDictionary[StreamStore, Jobs] = weakref.WeakKeyDictionary()


class Jobs:
    """The jobs of one app over one stream store (``None``: answers are not recorded, only the
    jobs running here are tracked, for their cancel routes). ``create_app`` owns one and hands it to
    each route; routes assembled by hand share one the same way (``jobs=``)."""

    def __init__(self, store: StreamStore | None = None) -> None:
        self.store = store
        self._local: dict[str, LocalJob] = {}
        # Running writers, referenced until they end (the event loop keeps only weak references).
        self._tasks: set[asyncio.Task[None]] = set()

    @classmethod
    def shared(cls, store: StreamStore | None) -> Jobs:
        """The store's default service, for routes given no ``jobs=`` (the spelling before it;
        deprecated): held as long as the store is, so those routes still reach each other's jobs
        (``None``: the one default without a store, for unrecorded workflow runs and their cancel
        route). Goes with the bare ``stream_store=`` spelling."""
        if store is None:
            return _UNRECORDED
        jobs = _SHARED.get(store)
        if jobs is None:
            jobs = _SHARED[store] = cls(store)
        return jobs

    def require_store(self, where: str = "Jobs") -> StreamStore:
        """The stream store; a `Jobs` without one is refused, naming ``where`` it was needed."""
        if self.store is None:
            raise ValueError(f"{where} needs a Jobs with a stream store (Jobs(store))")
        return self.store

    async def claim(self, key: str, owner: str | None) -> str:
        """Start the job's stream under ``key``; raises ``StreamOwnerError`` when the key has an
        active stream of another owner (the route says what that means for its kind)."""
        return await self.require_store().start(key, owner=owner)

    async def release(self, stream_id: str) -> None:
        """End a claimed stream no answer will be written to (the request failed before its job
        started); a store failure is logged, not raised: the request's own error is the answer (the
        claim then expires, and its owner may claim the key again meanwhile)."""
        try:
            await self.require_store().finish(stream_id)
        except Exception:
            logger.warning("releasing the claim of stream %s failed", stream_id, exc_info=True)

    def local(self, key: str) -> LocalJob | None:
        """The job running in this process under ``key``, if one is."""
        return self._local.get(key)

    def _track(self, key: str, job: LocalJob, supersede: bool) -> Callable[[], None]:
        """Make ``job`` the key's job here (``supersede``: a previous one is aborted, as a chat
        streams one answer at a time); returns the call that forgets it (if it is still the key's)."""
        previous = self._local.get(key)
        if previous is not None and supersede:
            previous.abort()
        self._local[key] = job

        def forget() -> None:
            if self._local.get(key) is job:
                del self._local[key]

        return forget

    def run_here(
        self,
        key: str,
        stream_id: str,
        chunks: AsyncIterator[Any],
        abort: Callable[[], object],
        *,
        subject: Any = None,
        supersede: bool = False,
    ) -> AsyncIterator[Any]:
        """Run the job in this process, in a task of its own that writes ``chunks`` to ``stream_id``
        (`write_job`); returns a reader of that stream (the answer to send). Closing the reader does
        not stop the job; `cancel` does, and (``supersede``) a new job under the same ``key``.
        ``abort`` stops the producing at once."""
        store = self.require_store()
        job = LocalJob(stream_id, abort, subject)
        forget = self._track(key, job, supersede)

        async def produce() -> None:
            try:
                await write_job(
                    store, stream_id, chunks, lease_s=IN_PROCESS_LEASE_S, on_worker=False, stop=abort
                )
            except Exception:
                logger.exception(
                    "closing stream %s failed; its readers end when its writer lease runs out", stream_id
                )

        def done(task: asyncio.Task[None]) -> None:
            self._tasks.discard(task)
            forget()

        task = job.writer = asyncio.create_task(produce(), name=f"record {stream_id}")
        self._tasks.add(task)
        task.add_done_callback(done)
        return self.follow(stream_id)

    async def settled(self, key: str) -> None:
        """Wait until the stream of the key's job here is written to its end: for a caller whose
        answer came from the job's live output (the Mastra API's legs), whose recording may still
        be finishing when the next leg of the run is asked for."""
        job = self._local.get(key)
        if job is not None and job.writer is not None:
            await asyncio.wait([job.writer])

    def track(
        self, key: str, chunks: AsyncIterator[Any], abort: Callable[[], object], *, subject: Any = None
    ) -> AsyncIterator[Any]:
        """A job answered here without a recording: ``chunks`` as they are, the job reachable by
        `local` (and `cancel`) until they end."""
        forget = self._track(key, LocalJob(None, abort, subject), supersede=False)

        async def chunks_then_forget() -> AsyncIterator[Any]:
            try:
                async for chunk in chunks:
                    yield chunk
            finally:
                forget()

        return chunks_then_forget()

    async def hand_off(self, stream_id: str, dispatch: Awaitable[None]) -> AsyncIterator[Any]:
        """Hand a claimed job to a worker (``dispatch``: the runner's, durably handed over when it
        returns); the answer is the stream, followed. The claim is released if the dispatch fails."""
        try:
            await dispatch
        except BaseException:
            await self.release(stream_id)
            raise
        return self.follow(stream_id)

    async def follow(self, stream_id: str, after: int = 0) -> AsyncIterator[Any]:
        """The stream's UI chunks from index ``after``, until it finishes: as the bytes written
        (`StoredUIChunk`), which the SSE response frames as they are (no decode and encode again per
        chunk and reader). A stream that ends unfinished (its writer died, the store lost it) or a
        store that fails ends the answer with an ``error`` chunk (`ANSWER_LOST`,
        `STORE_UNAVAILABLE`): the client is told, the response ends."""
        store = self.require_store()
        try:
            async for raw in read_checked(store, stream_id, after=after):
                yield StoredUIChunk(raw)
        except StreamLostError as exc:
            logger.warning("stream %s: %s", stream_id, exc)
            await _end_lost(store, stream_id)
            yield {"type": "error", "errorText": ANSWER_LOST}
        except StreamStoreUnavailableError as exc:
            logger.warning("stream %s: following it failed: %s", stream_id, exc)
            yield {"type": "error", "errorText": STORE_UNAVAILABLE}
        except Exception:
            logger.exception("stream %s: following it failed", stream_id)
            yield {"type": "error", "errorText": STORE_UNAVAILABLE}

    async def cancel(
        self,
        key: str,
        stream_id: str,
        runner: JobCanceller | None,
        *,
        ending: Sequence[Mapping[str, Any]],
        timeout_s: float = DEFAULT_STOP_TIMEOUT_S,
        before_ending: Callable[[], Awaitable[None]] | None = None,
    ) -> bool:
        """Stop the job writing ``stream_id`` under ``key`` and wait (up to ``timeout_s``) for its
        stream to end: aborted here if it runs here, else cancelled on its worker through
        ``runner``. A stream no worker ends in time (the job never started, or its worker died) is
        ended here: ``before_ending()`` first (a workflow run's snapshot marked ``canceled``), then
        the ``ending`` chunks (`end_cancelled`). Returns ``False``, doing nothing, when the job runs
        in no process this one reaches (not here, and no ``runner``)."""
        store = self.require_store()
        local = self._local.get(key)
        if local is not None and local.stream_id == stream_id:
            local.abort()
            if not await ends_within(store, stream_id, timeout_s):
                logger.warning("stream %s: the stopped job is still running after %ss", stream_id, timeout_s)
            return True
        if runner is None:
            return False
        if await runner.cancel(stream_id) and await ends_within(store, stream_id, timeout_s):
            return True
        if before_ending is not None:
            await before_ending()
        await end_cancelled(store, stream_id, *ending)
        return True


async def _end_lost(store: StreamStore, stream_id: str) -> None:
    """End the stream of a dead writer as its readers were told (`ANSWER_LOST`): a later resume
    finds nothing running, a stop has nothing to stop. Positional, so the readers that notice
    together write one error chunk; a takeover that comes later finds the stream finished."""
    try:
        await end_with_error(store, stream_id, ANSWER_LOST)
    except Exception as exc:
        logger.warning("stream %s: ending the lost answer failed: %s", stream_id, exc)


_UNRECORDED = Jobs()
