"""``smooth_stream``: Mastra's ``smoothStream`` transform, in linear time, plus two opt-in extras.

Behaviour (Mastra ``@mastra/core`` 1.71.0, ``packages/core/src/stream/smooth-stream.ts``):

* ``text-delta`` and ``reasoning-delta`` text is buffered per (type, id); a change of type or id, any
  other chunk, and the end of the stream flush the buffer as one piece (no delay). Other chunks are
  then passed on as the *same object*.
* After every delta the chunking rule cuts pieces off the front of the buffer; after every such piece
  the transform sleeps ``delay_in_ms`` (``None``: never; ``0``: still a scheduler yield).
* A piece is a copy of the *latest* delta of the buffer with the piece's text; ``metadata`` and
  ``provider_metadata`` (latest non-``None`` value) ride on the first piece emitted after they were
  seen, then are dropped. An empty piece is emitted only to carry pending metadata.
* ``"word"`` is ``/\\S+\\s+/`` and ``"line"`` is ``/\\n+/`` with JavaScript's ``\\s``; a piece is
  everything up to the end of the first match. A segmenter emits the first segment whenever the
  buffer is not empty (it never waits). Errors are Mastra's ``TypeError`` messages.

``"word"`` and ``"line"`` without ``max_lag_ms`` run in the tight loop of
`agentstream.stream._smooth_eager` (same output, a fraction of the cost per delta).

Linear time: ``"word"``/``"line"`` keep a scan position, so each character is examined a constant
number of times (Mastra re-runs the pattern on the whole buffer, cubic on text without whitespace);
pending text from earlier deltas is kept as a list of parts and joined once, when emitted. Segmenters
see a window of the buffer (at least 256 characters, grown while the first segment nearly fills it),
so a huge delta is not re-segmented once per piece. Detector functions and user patterns are called
on the whole buffer as in Mastra: their cost is theirs.

Strings are Python strings: a delta may end in a high surrogate and the next begin with the low
one (JavaScript strings are UTF-16 and Mastra's JSON can carry lone surrogates). Appending joins
such a pair into the one astral character it encodes, as JavaScript concatenation does; unpaired
surrogates stay single characters and a segmenter gives each its own segment, as V8 does.

Beyond Mastra (off by default, so parity holds):

* ``max_lag_ms``: the upstream is read by a task into a queue (always done when there is a delay,
  so the delay paces only the consumer, never the producer). When the oldest text not yet emitted
  arrived more than ``max_lag_ms`` ago, all pieces the buffer holds are emitted as one and the
  delay is skipped, until the view has caught up.
* ``hold_back``: segmenter and ``"grapheme"`` chunking keep the last segment until more text arrives
  or the buffer is flushed (word granularity also keeps a segment followed by fewer than 2
  characters, since dictionary segmentation of CJK text changes near the end of the buffer:
  ``こんに`` is ``こん|に`` but ``こんにちは`` is one word). Other chunkings already wait.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any, Final, TypeAlias

import msgspec

from ..chunks import Chunk, ReasoningDelta, TextDelta
from ._chunkers import ChunkDetector, Chunking, SegmenterLike, _Chunker, _chunker_factory
from ._pacing import pace
from ._smooth_eager import EAGER_KINDS, run_eager
from ._types import Transform, TransformFactory, apply_transforms, factory_list

__all__ = [
    "ChunkDetector",
    "Chunking",
    "SegmenterLike",
    "SmoothStream",
    "SmoothStreamFactory",
    "check_transform_factories",
    "compose_transforms",
    "smooth_stream",
    "smooth_stream_factory",
]


Sleep: TypeAlias = Callable[[float], Awaitable[Any]]


class _Buffer:
    """Mastra's ``bufferedChunk`` / ``bufferedMetadata`` / ``bufferedProviderMetadata``."""

    __slots__ = ("chunker", "key_id", "key_type", "last", "metadata", "provider_metadata")

    def __init__(self, chunker: _Chunker) -> None:
        self.chunker = chunker
        self.last: Any = None
        self.key_type: type | None = None
        self.key_id: str | None = None
        self.metadata: dict[str, Any] | None = None
        self.provider_metadata: dict[str, Any] | None = None

    def piece(self, text: str) -> Chunk | None:
        last = self.last
        metadata = self.metadata
        provider_metadata = self.provider_metadata
        if last is None or (not text and metadata is None and provider_metadata is None):
            return None
        self.metadata = self.provider_metadata = None
        payload = msgspec.structs.replace(last.payload, text=text, provider_metadata=provider_metadata)
        chunk: Chunk = msgspec.structs.replace(last, payload=payload, metadata=metadata)
        return chunk

    def flush(self) -> Chunk | None:
        out = self.piece(self.chunker.take_all())
        self.last = None
        self.key_type = None
        self.key_id = None
        self.metadata = self.provider_metadata = None
        return out


def _malformed(chunk: Any) -> TypeError | None:
    """A clear error naming the field of a text/reasoning delta that is not what the protocol says."""
    kind = chunk.type
    payload = getattr(chunk, "payload", None)
    if payload is None:
        return TypeError(f"{kind} chunk has no payload (field 'payload' is required)")
    text = getattr(payload, "text", None)
    if not isinstance(text, str):
        return TypeError(f"{kind} chunk field 'payload.text' must be a str, got {type(text).__name__}")
    pid = getattr(payload, "id", None)
    if not isinstance(pid, str):
        return TypeError(f"{kind} chunk field 'payload.id' must be a str, got {type(pid).__name__}")
    return None


_TEXT_TYPES: Final = (TextDelta, ReasoningDelta)


class _End:
    pass


_END: Final = _End()


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _QueuedReader:
    """Reads the upstream in its own task, so the consumer's pace never throttles the producer."""

    __slots__ = ("_loop", "_queue", "_source", "_task", "_waiter", "arrived")

    def __init__(self, source: AsyncIterable[Chunk]) -> None:
        self._source = source
        self._queue: collections.deque[Any] = collections.deque()
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[None] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self.arrived = 0.0

    def start(self) -> None:
        self._task = self._loop.create_task(self._pump())

    def _put(self, item: Any) -> None:
        self._queue.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _pump(self) -> None:
        try:
            async for chunk in self._source:
                self._put((chunk, self._loop.time()))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._put(_Failure(exc))
            return
        self._put(_END)

    async def next(self) -> Chunk:
        queue = self._queue
        while not queue:
            self._waiter = self._loop.create_future()
            await self._waiter
            self._waiter = None
        item = queue.popleft()
        if item is _END:
            queue.appendleft(item)
            raise StopAsyncIteration
        if isinstance(item, _Failure):
            queue.appendleft(item)
            raise item.error
        chunk, self.arrived = item
        return chunk  # type: ignore[no-any-return]

    def take_if_same(self, cls: type | None, pid: str | None) -> Any:
        """The next queued chunk if it is a well-formed delta of buffer (``cls``, ``pid``), else ``None``."""
        queue = self._queue
        if not queue:
            return None
        item = queue[0]
        if type(item) is not tuple:
            return None
        chunk, arrived = item
        if type(chunk) is not cls:
            return None
        payload = getattr(chunk, "payload", None)
        if getattr(payload, "id", None) != pid or type(getattr(payload, "text", None)) is not str:
            return None
        queue.popleft()
        self.arrived = arrived
        return chunk

    def __aiter__(self) -> _QueuedReader:
        return self

    def __anext__(self) -> Awaitable[Chunk]:
        return self.next()

    async def close(self) -> None:
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})


class SmoothStream:
    """A single-use smoothing transform: ``transform(chunks)`` returns the smoothed async iterator.

    Use it as ``output.full_stream.pipe_through(smooth_stream(...))``. Closing the returned iterator
    early (``aclose()``) stops the upstream reader and closes the upstream.
    """

    __slots__ = (
        "_delay",
        "_eager",
        "_hold_back",
        "_max_lag",
        "_new_chunker",
        "_sleep",
        "_used",
        "delay_in_ms",
    )

    def __init__(
        self,
        *,
        delay_in_ms: float | None = 10,
        chunking: Chunking = "word",
        sleep: Sleep = pace,
        max_lag_ms: float | None = None,
        hold_back: bool = False,
    ) -> None:
        self._new_chunker = _chunker_factory(chunking, hold_back)
        for name, value in (("delay_in_ms", delay_in_ms), ("max_lag_ms", max_lag_ms)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise TypeError(f"{name} must be a number or None, got {type(value).__name__}")
            if value is not None and not value >= 0:
                raise ValueError(f"{name} must be >= 0, got {value!r}")
        self.delay_in_ms = delay_in_ms
        self._delay = None if delay_in_ms is None else delay_in_ms / 1000
        self._max_lag = None if max_lag_ms is None else max_lag_ms / 1000
        self._sleep = sleep
        self._hold_back = hold_back
        self._used = False
        # The word and line rules without a lag limit run in their own tight loop (same output).
        self._eager = (
            chunking if isinstance(chunking, str) and chunking in EAGER_KINDS and max_lag_ms is None else None
        )

    def __call__(self, source: AsyncIterable[Chunk]) -> AsyncIterator[Chunk]:
        if self._used:
            raise RuntimeError(
                "this smooth_stream() transform was already used; use smooth_stream_factory() for a reusable one"
            )
        self._used = True
        if self._eager is not None:
            reader = None if self._delay is None else _QueuedReader(source)
            if reader is not None:
                reader.start()

            async def close(finished: bool) -> None:
                await _close_upstream(reader, source, finished)

            return run_eager(reader or source, self._eager, self._delay, self._sleep, _malformed, close)
        return self._run(source)

    def _reader(
        self, source: AsyncIterable[Chunk]
    ) -> tuple[_QueuedReader | None, Callable[[], Awaitable[Chunk]]]:
        """With a delay or a lag limit the upstream is read in its own task; without, directly."""
        if self._delay is None and self._max_lag is None:
            return None, aiter(source).__anext__
        reader = _QueuedReader(source)
        reader.start()
        return reader, reader.next

    async def _run(self, source: AsyncIterable[Chunk]) -> AsyncIterator[Chunk]:
        chunker = self._new_chunker()
        eager = chunker.eager
        buf = _Buffer(chunker)
        delay = self._delay
        sleep = self._sleep
        replace = msgspec.structs.replace
        reader, next_chunk = self._reader(source)
        lag = None if self._max_lag is None else _Lag(self._max_lag, reader, buf, chunker)
        finished = False
        try:
            while True:
                try:
                    chunk = await next_chunk()
                except StopAsyncIteration:
                    break
                except Exception:
                    if (out := buf.flush()) is not None:
                        yield out
                    raise
                cls = type(chunk)
                if cls is not TextDelta and cls is not ReasoningDelta and not isinstance(chunk, _TEXT_TYPES):
                    if buf.last is not None and (out := buf.flush()) is not None:
                        yield out
                    yield chunk
                    continue
                delta: Any = chunk
                payload = delta.payload
                try:
                    pid = payload.id
                    text = payload.text
                except AttributeError:
                    pid = text = None
                if (type(text) is not str or type(pid) is not str) and (
                    error := _malformed(chunk)
                ) is not None:
                    if (out := buf.flush()) is not None:
                        yield out
                    raise error
                if cls is not buf.key_type or pid != buf.key_id:
                    if buf.last is not None:
                        out = buf.flush()
                        if lag is not None:
                            lag.restart()
                        if out is not None:
                            yield out
                    buf.key_type = cls
                    buf.key_id = pid
                buf.last = delta
                metadata = delta.metadata
                if metadata is None:
                    metadata = buf.metadata
                else:
                    buf.metadata = metadata
                provider_metadata = payload.provider_metadata
                if provider_metadata is None:
                    provider_metadata = buf.provider_metadata
                else:
                    buf.provider_metadata = provider_metadata
                pieces: Iterator[str]
                if eager:
                    found = chunker.feed(text)
                    if found is None:
                        if lag is not None:
                            lag.arrived()
                        continue
                    pieces = iter(found)
                else:
                    chunker.push(text)
                    pieces = iter(chunker.next_piece, None)
                if lag is not None:
                    lag.arrived()
                    for piece in pieces:
                        out, lagging, failed = lag.piece(piece, pieces, delta)
                        yield out
                        if failed is not None:
                            raise failed
                        if delay is not None and not lagging:
                            await sleep(delay)
                    continue
                for piece in pieces:
                    out = replace(
                        delta,
                        payload=replace(payload, text=piece, provider_metadata=provider_metadata),
                        metadata=metadata,
                    )
                    if metadata is not None or provider_metadata is not None:
                        metadata = provider_metadata = buf.metadata = buf.provider_metadata = None
                    yield out
                    if delay is not None:
                        await sleep(delay)
            finished = True
            if (out := buf.flush()) is not None:
                yield out
        finally:
            await _close_upstream(reader, source, finished)


async def _close_upstream(reader: _QueuedReader | None, source: AsyncIterable[Chunk], finished: bool) -> None:
    """Stop the reader task, or close an upstream the consumer left before its end."""
    if reader is not None:
        await reader.close()
    elif not finished:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()


class _Lag:
    """``max_lag_ms``: when the oldest text not yet emitted arrived too long ago, catch up at once.

    ``arrivals`` holds (``chunker.total`` after a delta, its arrival time); ``emitted`` counts the
    characters emitted since the buffer began."""

    __slots__ = ("arrivals", "buf", "chunker", "emitted", "loop", "max_lag", "reader")

    def __init__(self, max_lag: float, reader: _QueuedReader | None, buf: _Buffer, chunker: _Chunker) -> None:
        assert reader is not None  # a lag limit always reads through the queue
        self.max_lag = max_lag
        self.reader = reader
        self.buf = buf
        self.chunker = chunker
        self.loop = asyncio.get_running_loop()
        self.arrivals: collections.deque[tuple[int, float]] = collections.deque()
        self.emitted = 0

    def restart(self) -> None:
        """A new buffer began: the old one's arrivals no longer count."""
        self.arrivals.clear()
        self.emitted = self.chunker.total

    def arrived(self) -> None:
        self.arrivals.append((self.chunker.total, self.reader.arrived))

    def piece(self, piece: str, pieces: Iterator[str], delta: Any) -> tuple[Chunk, bool, Exception | None]:
        """The chunk to emit for ``piece``, whether the view was lagging (no delay then), and the
        error the catch-up hit (raise it after emitting what was caught up).

        Lagging: everything the buffer can give now, plus the deltas of the same buffer already
        waiting in the queue, go out as one piece."""
        arrivals = self.arrivals
        while arrivals and arrivals[0][0] <= self.emitted:
            arrivals.popleft()
        lagging = bool(arrivals) and self.loop.time() - arrivals[0][1] > self.max_lag
        error: Exception | None = None
        if lagging:
            parts = [piece]
            try:
                parts.extend(pieces)
                self._absorb(parts)  # into ``parts``: what it cut before a failure still goes out
            except Exception as exc:
                error = exc
            piece = "".join(parts)
        self.emitted += len(piece)
        return self._piece(delta, piece), lagging, error

    def _absorb(self, parts: list[str]) -> None:
        """Feed the queued deltas of the current buffer now; every piece they complete goes to ``parts``."""
        buf, chunker, reader = self.buf, self.chunker, self.reader
        while (delta := reader.take_if_same(buf.key_type, buf.key_id)) is not None:
            buf.last = delta
            if delta.metadata is not None:
                buf.metadata = delta.metadata
            if delta.payload.provider_metadata is not None:
                buf.provider_metadata = delta.payload.provider_metadata
            if chunker.eager:
                parts.extend(chunker.feed(delta.payload.text) or ())
            else:
                chunker.push(delta.payload.text)
                parts.extend(iter(chunker.next_piece, None))
            self.arrived()

    def _piece(self, delta: Any, text: str) -> Chunk:
        out = self.buf.piece(text)
        assert out is not None
        return out


def smooth_stream(
    *,
    delay_in_ms: float | None = 10,
    chunking: Chunking = "word",
    sleep: Sleep = pace,
    max_lag_ms: float | None = None,
    hold_back: bool = False,
) -> SmoothStream:
    """Mastra's ``smoothStream()``: a single-use transform that paces text and reasoning deltas.

    ``chunking``: ``"word"`` (default), ``"line"``, ``"grapheme"``, a JavaScript RegExp literal string
    (``"/[^,]*,\\\\s*/"``), a compiled ``re``/``regex`` pattern (Python semantics), a detector
    ``(buffer) -> prefix | None``, or a segmenter (``segment(text)``, e.g. ``Segmenter``).
    ``sleep`` receives seconds (default `pace`: ``asyncio.sleep``'s semantics, one loop timer for
    every stream pausing as long). Invalid ``chunking`` raises Mastra's ``TypeError`` here.
    """
    return SmoothStream(
        delay_in_ms=delay_in_ms, chunking=chunking, sleep=sleep, max_lag_ms=max_lag_ms, hold_back=hold_back
    )


class SmoothStreamFactory:
    """Reusable form (``@mastra/ai-sdk``'s ``smoothStream``): each call makes a fresh transform."""

    __slots__ = ("_options",)

    def __init__(self, **options: Any) -> None:
        SmoothStream(**options)  # validate now, not on the first request
        self._options = options

    def __call__(self) -> SmoothStream:
        return SmoothStream(**self._options)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._options.items())
        return f"smooth_stream_factory({args})"


def smooth_stream_factory(
    *,
    delay_in_ms: float | None = 10,
    chunking: Chunking = "word",
    sleep: Sleep = pace,
    max_lag_ms: float | None = None,
    hold_back: bool = False,
) -> SmoothStreamFactory:
    """A transform factory for ``experimental_transform``: same options as ``smooth_stream``."""
    return SmoothStreamFactory(
        delay_in_ms=delay_in_ms, chunking=chunking, sleep=sleep, max_lag_ms=max_lag_ms, hold_back=hold_back
    )


def check_transform_factories(value: object, where: str) -> None:
    """Refuse, where it is configured, what cannot make a fresh transform for every stream.

    ``value`` is what ``experimental_transform`` accepts (``None``, a factory, or a sequence of
    them). The single-use `smooth_stream` passed there would otherwise fail on every request;
    the message names `agentstream.ai_sdk.smooth_stream`, its reusable form. ``where`` names
    the parameter in the message (e.g. ``"chat_route(experimental_transform=...)"``).
    """
    if value is None:
        return
    items = list(value) if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) else [value]
    for item in items:
        if isinstance(item, SmoothStream):
            raise TypeError(
                f"{where}: got a single-use agentstream.stream.smooth_stream(...) transform, but a factory "
                "is needed (each stream gets a fresh transform): use agentstream.ai_sdk.smooth_stream(...) "
                "with the same options"
            )
        if not callable(item):
            raise TypeError(
                f"{where}: expected a transform factory (a function with no arguments returning a "
                f"transform), got {type(item).__name__}"
            )
        try:
            inspect.signature(item).bind()
        except TypeError:
            raise TypeError(
                f"{where}: {item!r} needs arguments, so it is a transform, not a factory: pass "
                "a function with no arguments that returns a new transform"
            ) from None
        except ValueError:  # no signature to inspect (a builtin): accept it
            pass


def compose_transforms(
    factories: TransformFactory | Sequence[TransformFactory] | None,
) -> Transform:
    """One transform that pipes through a fresh transform from each factory, in order."""
    chain = factory_list(factories)

    def transform(source: AsyncIterable[Chunk]) -> AsyncIterator[Chunk]:
        return apply_transforms(source, chain)

    return transform
