"""`SpanRecorder`: an OpenTelemetry span processor that keeps our finished spans in the app's
storage (memory, SQLite, PostgreSQL), for the Mastra API's observability routes and Studio's
traces page. Needs the ``otel`` extra (``opentelemetry-sdk``).

A span's owner is the resource its request acted for (`traced_for` around the work, read when
the span starts); a root span with none is given its thread's resource (an agent run on a
thread) or its run's (a workflow run), looked up when it is saved. Spans end on the event loop
that ran the work; they are saved from there in batches, never blocking the span's end.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from ._mastra_span import span_record
from ._owner import current_trace_resource

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import Span, TracerProvider

    from ..storage import SpanRecord, Storage

__all__ = [
    "AppRecording",
    "SpanRecorder",
    "flush_spans",
    "record_spans",
    "record_spans_while_serving",
    "recording_spans",
]

log = logging.getLogger("agentstream.tracing")

_recorders: weakref.WeakSet[SpanRecorder] = weakref.WeakSet()


class SpanRecorder(SpanProcessor):
    """Saves every span that ends into ``storage`` (``max_pending`` at most wait to be saved; the
    oldest are dropped beyond that, with a warning, rather than growing without bound)."""

    def __init__(self, storage: Storage, *, max_pending: int = 10_000) -> None:
        self.storage = storage
        self.max_pending = max_pending
        self._owners: dict[int, str] = {}
        self._pending: list[SpanRecord] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0
        self._stopped = False
        _recorders.add(self)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        owner = current_trace_resource()
        if owner is not None and span.context is not None:
            with self._lock:
                self._owners[span.context.span_id] = owner

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is None or self._stopped:
            return
        with self._lock:
            owner = self._owners.pop(span.context.span_id, None)
        try:
            record = span_record(span, owner)
        except Exception:
            log.exception("span %r could not be recorded", span.name)
            return
        with self._lock:
            self._pending.append(record)
            if len(self._pending) > self.max_pending:
                del self._pending[0]
                self.dropped += 1
        self._wake()

    def _wake(self) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:  # ended in another thread: save from the loop that saved before
            loop = self._loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._start_saving)
            return
        self._loop = running
        self._start_saving()

    def _start_saving(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._save_pending())

    async def _save_pending(self) -> None:
        while True:
            with self._lock:
                batch, self._pending = self._pending, []
            if not batch:
                return
            try:
                await self.storage.save_spans([await self._owned(r) for r in batch])
            except Exception as exc:  # the store is down: these spans are lost, the app is not
                log.warning("saving %d span(s) failed: %s", len(batch), exc)

    async def _owned(self, record: SpanRecord) -> SpanRecord:
        """A root span with no owner gets its thread's or its workflow run's resource."""
        if record.resource_id is not None or record.parent_span_id is not None:
            return record
        import msgspec

        data: dict[str, Any] = record.data if isinstance(record.data, dict) else {}
        owner: str | None = None
        try:
            if record.span_type == "agent_run" and isinstance(data.get("threadId"), str):
                thread = await self.storage.find_thread(data["threadId"])
                owner = thread.resource_id if thread is not None else None
            elif (
                record.span_type == "workflow_run" and record.entity_id and isinstance(data.get("runId"), str)
            ):
                run = await self.storage.find_workflow_run(record.entity_id, data["runId"])
                owner = run.resource_id if run is not None else None
        except Exception as exc:
            log.warning("finding the owner of span %s failed: %s", record.span_id, exc)
        return record if owner is None else msgspec.structs.replace(record, resource_id=owner)

    async def flush(self) -> None:
        """Save every span that has ended so far (the routes call this before they read)."""
        task = self._task
        if task is not None and not task.done() and self._loop is asyncio.get_running_loop():
            await asyncio.shield(task)
        await self._save_pending()

    def shutdown(self) -> None:
        # An SDK provider cannot drop a processor: a stopped recorder stays on it and saves nothing.
        self._stopped = True
        _recorders.discard(self)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


async def flush_spans(storage: Storage) -> None:
    """Save the spans that ended so far into ``storage`` (every recorder writing there)."""
    for recorder in list(_recorders):
        if recorder.storage is storage:
            await recorder.flush()


def recording_spans(storage: Storage) -> bool:
    """Whether the spans that end are being saved into ``storage`` now (a recorder writes there
    and has not been stopped): what Mastra's ``observabilityEnabled`` says of its server."""
    return any(recorder.storage is storage and not recorder._stopped for recorder in list(_recorders))


def record_spans(
    storage: Storage, *, tracer_provider: TracerProvider | None = None, include_content: bool = True
) -> SpanRecorder:
    """Trace every agent and workflow run (`instrument`) into ``storage``: a `SpanRecorder` on
    ``tracer_provider`` (a new SDK ``TracerProvider`` when ``None``). ``include_content``: keep
    prompts, outputs, tool arguments and results on the spans (Studio shows them as the span's
    input and output). ``instrument(enabled=False)`` switches tracing off again."""
    from opentelemetry.sdk.trace import TracerProvider as SdkProvider

    from ._settings import instrument

    provider = tracer_provider or SdkProvider()
    recorder = SpanRecorder(storage)
    provider.add_span_processor(recorder)
    instrument(provider, include_content=include_content)
    return recorder


class AppRecording:
    """The spans an app keeps while it serves (`record_spans_while_serving`): `stop` when it stops."""

    def __init__(self, recorder: SpanRecorder | None, settings: Any = None, provider: Any = None) -> None:
        self.recorder = recorder
        """``None``: nothing recorded here (already recorded, or no SDK to record with)."""
        self._settings = settings
        self._provider = provider

    async def stop(self) -> None:
        """Save what has ended, stop saving, and switch off the tracing this started (only if it
        is still the one in force: an app may have switched on its own since)."""
        from ._settings import global_settings, instrument

        if self.recorder is None:
            return
        await self.recorder.flush()
        self.recorder.shutdown()
        if self._settings is not None and global_settings() is self._settings:
            instrument(enabled=False)
        if self._provider is not None:
            self._provider.shutdown()


def record_spans_while_serving(storage: Storage) -> AppRecording:
    """What ``create_app`` does when it starts serving: every agent and workflow run traced into
    ``storage`` (Studio's traces), prompts and answers included, unless that is done already.

    * spans already recorded into ``storage`` (the app called `record_spans` itself): nothing more;
    * tracing already switched on (`instrument`, ``agentstream serve --trace``) with an SDK
      provider: a recorder is added to that provider, under the app's own ``include_content``;
    * tracing on with a provider that is not the SDK's: nothing is recorded (a warning says so);
    * otherwise `record_spans`, undone by `AppRecording.stop`.

    Without the OpenTelemetry SDK (the ``otel`` extra) nothing is recorded and a warning says how
    to get it: serving must not need it.
    """
    from ._settings import global_settings

    if any(recorder.storage is storage for recorder in list(_recorders)):
        return AppRecording(None)
    current = global_settings()
    if current is None:
        recorder = record_spans(storage)
        ours = global_settings()
        return AppRecording(recorder, ours, ours.tracer_provider if ours is not None else None)
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider as SdkProvider

    provider = current.tracer_provider or trace.get_tracer_provider()
    if not isinstance(provider, SdkProvider):
        log.warning(
            "tracing is on with a %s, not an OpenTelemetry SDK TracerProvider: no trace is kept for "
            "Studio (call record_spans(storage, tracer_provider=...) with an SDK provider)",
            type(provider).__name__,
        )
        return AppRecording(None)
    recorder = SpanRecorder(storage)
    provider.add_span_processor(recorder)
    return AppRecording(recorder)
