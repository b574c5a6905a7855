"""Shared HTTP + SSE machinery for the real providers.

One ``_HTTPStreamingModel.do_stream`` drives every provider: it builds the request body (provider
hook), sends it with retries (429 / 5xx / connection errors, only before the first part is yielded),
parses the SSE body with httpx-sse, decodes each event's JSON once, and hands the decoded value to a
per-call provider ``_Transformer`` that turns it into ``LanguageModelV2StreamPart`` dicts.

Error policy (mirrors the AI SDK):

* non-2xx after retries: a single ``error`` part carrying an `APICallError` (the AI SDK
  throws from ``doStream`` before any stream exists, so no ``stream-start``/``finish``);
* an error *event* inside a 200 stream, or an event whose JSON does not parse: an ``error`` part,
  then the stream continues and the final ``finish`` part reports ``finishReason: "error"``
  (``openai-chat-language-model.ts`` does exactly this);
* the connection breaks, or the body ends without the provider's end marker (``[DONE]``,
  ``message_stop``, ``response.completed``), before the first event: retried like a failed
  request; after it: an ``error`` part and the generator ends, no ``finish`` and no retry (parts
  were already emitted, and a retry would emit them twice). The AI SDK reports a body that just
  stops as ``finish: unknown``, which makes an agent loop call the model again: we say "error";
* the abort signal fires: the HTTP request is cancelled and `AbortError` is raised from the
  generator (``fetch`` rejects with an ``AbortError`` in JS).
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, NamedTuple

import httpx
import msgspec
from httpx_sse import EventSource, SSEError
from typing_extensions import TypedDict, Unpack

from .._abort import AbortError, AbortSignal, abortable, until_aborted
from .._secrets import register_secret, shorten
from ..chunks import wellformed_json_text
from ._base import APICallError, CallOptions, ModelStream, StreamPart

__all__ = ["DEFAULT_TIMEOUT", "Sleep", "TransportOptions", "call_settings", "iso_timestamp"]

Sleep = Callable[[float], Awaitable[None]]

DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)
"""Generous read timeout (reasoning models can think for minutes), short connect timeout."""

_json_decode = msgspec.json.Decoder().decode
_ABORTED = object()
_END = object()
_CREDENTIAL_HEADER = ("authorization", "key", "token", "secret", "cookie")
log = logging.getLogger("agentstream.models")


def iso_timestamp(seconds: float) -> str:
    """Unix seconds → ``2024-05-13T19:22:01.000Z`` (UTC, milliseconds, ``Z``)."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def default_id_generator() -> Callable[[], str]:
    prefix = uuid.uuid4().hex[:12]
    counter = itertools.count()
    return lambda: f"{prefix}-{next(counter)}"


def provider_error_message(body: str, fallback: str, secret: str | None = None) -> tuple[str, Any]:
    """Pull the provider's own message out of an error body (OpenAI, Anthropic, Groq, OpenRouter).

    A body that is not JSON is the message itself, redacted first and then cut to 500 characters.
    """
    try:
        data = _json_decode(body)
    except msgspec.DecodeError:
        text = body.strip()
        return (shorten(text, 500, (secret,)) if text else fallback), None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"], data
        if isinstance(err, str):
            return err, data
        if isinstance(data.get("message"), str):
            return data["message"], data
    return fallback, data


def _retry_delay(response: httpx.Response | None, attempt: int, initial: float) -> float:
    default: float = initial * 2.0**attempt
    if response is None:
        return default
    headers = response.headers
    try:
        if "retry-after-ms" in headers:
            delay: float = float(headers["retry-after-ms"]) / 1000
        elif "retry-after" in headers:
            raw = headers["retry-after"]
            try:
                delay = float(raw)
            except ValueError:
                parsed = email.utils.parsedate_to_datetime(raw)
                delay = parsed.timestamp() - time.time()
        else:
            return default
    except (ValueError, TypeError):
        return default
    # Like the AI SDK: trust the server when its hint is sane, else fall back to backoff.
    return delay if 0 <= delay <= 60 else default


def call_settings(
    options: CallOptions, wire: Mapping[str, str | None], warnings: list[dict[str, Any]]
) -> dict[str, Any]:
    """The call's standard settings under their wire names (``{"temperature": "temperature", "top_k":
    "topK", ...}``); a setting mapped to ``None`` is one the API lacks: given, it is an
    ``unsupported-setting`` warning (named as the AI SDK names it, ``topK``) instead."""
    out: dict[str, Any] = {}
    for key, api in wire.items():
        value = options.get(key)
        if value is None:
            continue
        if api is None:
            head, *rest = key.split("_")
            warnings.append(
                {"type": "unsupported-setting", "setting": head + "".join(w.title() for w in rest)}
            )
        else:
            out[api] = value
    return out


class _Transformer:
    """Per-call state machine: decoded provider event → stream parts. Subclassed per provider."""

    end_marker = "[DONE]"

    @property
    def ended(self) -> bool:
        """The provider said the response is complete, or reported an error in the stream."""
        return False

    def feed(self, event: str, value: Any) -> list[StreamPart]:
        raise NotImplementedError

    def invalid_chunk(self) -> None:
        """An event could not be decoded (the AI SDK chat model then finishes with ``error``)."""

    def finish(self) -> list[StreamPart]:
        raise NotImplementedError


class _EndingTransformer(_Transformer):
    """A transformer for a provider that marks the response's end in an event: once it has, or an
    event could not be decoded (the response then finishes with ``error``), nothing more is read."""

    done = False
    errored = False

    @property
    def ended(self) -> bool:
        return self.done or self.errored

    def invalid_chunk(self) -> None:
        self.errored = True


class TransportOptions(TypedDict, total=False):
    """How a provider reaches its server: the keyword arguments every HTTP model takes.

    `headers` (added to every request), `timeout` (seconds or an ``httpx.Timeout``; default
    `DEFAULT_TIMEOUT`), `max_retries` (default 2: 429, 5xx, timeouts and connection errors before the
    first part), `retry_initial_delay` (default 0.5 s, doubled per retry unless the server says
    ``retry-after``), `sleep` (the wait between retries), `http_client` (a shared
    ``httpx.AsyncClient``), `transport` (an ``httpx`` transport for a client made per call) and
    `generate_id` (ids for parts the provider does not name).
    """

    headers: Mapping[str, str] | None
    timeout: httpx.Timeout | float | None
    max_retries: int
    retry_initial_delay: float
    sleep: Sleep | None
    http_client: httpx.AsyncClient | None
    transport: httpx.AsyncBaseTransport | None
    generate_id: Callable[[], str] | None


class _Opened(NamedTuple):
    response: httpx.Response
    events: AsyncGenerator[object, None]
    first: object
    """The first item of ``events`` (already read, to know the stream really started)."""


class _HTTPStreamingModel:
    """Base for the HTTP providers; subclasses implement the ``_request`` / ``_transformer`` hooks."""

    specification_version = "v2"

    def __init__(
        self,
        model_id: str,
        *,
        provider: str,
        base_url: str,
        api_key: str | None,
        **transport: Unpack[TransportOptions],
    ) -> None:
        self.model_id = model_id
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._headers = dict(transport.get("headers") or {})
        timeout = transport.get("timeout")
        self._timeout = timeout if timeout is not None else DEFAULT_TIMEOUT
        self.max_retries = transport.get("max_retries", 2)
        self.retry_initial_delay = transport.get("retry_initial_delay", 0.5)
        self._sleep: Sleep = transport.get("sleep") or asyncio.sleep
        self._client = transport.get("http_client")
        self._transport = transport.get("transport")
        self._generate_id = transport.get("generate_id") or default_id_generator()
        register_secret(api_key)
        for name, value in self._headers.items():
            if any(word in name.lower() for word in _CREDENTIAL_HEADER):
                register_secret(
                    value.partition(" ")[2] if value.lower().startswith(("bearer ", "basic ")) else value
                )
                register_secret(value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider={self.provider!r}, model_id={self.model_id!r})"

    # -- hooks -------------------------------------------------------------------------------
    def _auth_headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _request(self, options: CallOptions) -> tuple[str, str, dict[str, Any] | None, list[dict[str, Any]]]:
        """Return ``(method, url, json_body, warnings)``."""
        raise NotImplementedError

    def _transformer(self, options: CallOptions) -> _Transformer:
        raise NotImplementedError

    def _refresh_credentials(self) -> Awaitable[None] | None:
        """What makes the credentials `_auth_headers` sends current (an expired OAuth token); none here."""
        return None

    def _sign(self, method: str, url: str, headers: dict[str, str], content: bytes | None) -> dict[str, str]:
        """The headers to send, once the body is final (AWS SigV4 signs both); as they are by default."""
        return headers

    # -- driver ------------------------------------------------------------------------------
    def _error(
        self,
        message: str,
        url: str,
        *,
        status: int | None = None,
        body: str | None = None,
        headers: Mapping[str, str] | None = None,
        retryable: bool | None = None,
        data: Any = None,
        cause: BaseException | None = None,
    ) -> APICallError:
        return APICallError(
            message,
            url=url,
            provider=self.provider,
            status_code=status,
            response_body=body,
            response_headers=headers,
            is_retryable=retryable,
            data=data,
            cause=cause,
            secret=self._api_key,
        )

    async def _open(
        self,
        client: httpx.AsyncClient,
        method: str,
        url: str,
        content: bytes | None,
        headers: dict[str, str],
        signal: AbortSignal | None,
        info: ModelStream,
        transformer: _Transformer,
    ) -> _Opened | APICallError:
        """Send with retries until the first event is in; return it, or the final error.

        Everything up to the first event is retried (429 / 5xx / 408 / 409, a refused or broken
        connection, a body that ends at once): nothing has been emitted yet. The response headers
        go to ``info``.
        """
        attempt = 0
        while True:
            response: httpx.Response | None = None
            request = client.build_request(method, url, content=content, headers=headers)
            try:
                response = await until_aborted(client.send(request, stream=True), signal)
            except httpx.TimeoutException as exc:
                error = self._error(
                    f"request timed out: {type(exc).__name__}", url, retryable=True, cause=exc
                )
            except httpx.TransportError as exc:
                error = self._error(
                    f"cannot connect: {exc or type(exc).__name__}", url, retryable=True, cause=exc
                )
            else:
                info.response = {"headers": dict(response.headers.items())}
                if response.status_code < 300:
                    opened = await self._first_event(response, signal, transformer)
                    if not isinstance(opened, APICallError):
                        return opened
                    error = opened
                else:
                    error = await self._http_error(response, url, signal)
            if not error.is_retryable or attempt >= self.max_retries:
                return error
            delay = _retry_delay(response, attempt, self.retry_initial_delay)
            log.info(
                "%s: %s; retry %d of %d in %.1f s", self.provider, error, attempt + 1, self.max_retries, delay
            )
            await until_aborted(self._sleep(delay), signal)
            attempt += 1

    async def _http_error(
        self, response: httpx.Response, url: str, signal: AbortSignal | None
    ) -> APICallError:
        try:
            raw = (await until_aborted(response.aread(), signal)).decode("utf-8", "replace")
        finally:
            await response.aclose()
        message, data = provider_error_message(raw, response.reason_phrase or "HTTP error", self._api_key)
        return self._error(
            message, url, status=response.status_code, body=raw, headers=response.headers, data=data
        )

    async def _first_event(
        self, response: httpx.Response, signal: AbortSignal | None, transformer: _Transformer
    ) -> _Opened | APICallError:
        """The open stream and its first item; a retryable error if it broke or ended before one."""
        events = self._events(response, signal)
        try:
            first = await events.__anext__()
        except StopAsyncIteration:
            first = self._cut(response, transformer, retryable=True)
        except BaseException:
            await events.aclose()
            await response.aclose()
            raise
        if isinstance(first, APICallError) and first.is_retryable:
            await events.aclose()
            await response.aclose()
            return first
        return _Opened(response, events, first)

    def _cut(self, response: httpx.Response, transformer: _Transformer, *, retryable: bool) -> APICallError:
        return self._error(
            f"the response stream ended before {transformer.end_marker}",
            str(response.request.url),
            retryable=retryable,
        )

    def do_stream(self, options: CallOptions) -> ModelStream:
        """Stream one model call as AI SDK ``LanguageModelV2StreamPart`` dicts.

        The returned `ModelStream` reports the request body (``request``) and the response
        headers (``response``) once the first part is out.
        """
        info = ModelStream()
        return info.attach(self._stream(options, info))

    async def _stream(self, options: CallOptions, info: ModelStream) -> AsyncGenerator[StreamPart, None]:
        signal = options.get("abort_signal")
        if signal is not None:
            signal.throw_if_aborted()
        refresh = self._refresh_credentials()
        if refresh is not None:
            await until_aborted(refresh, signal)
        method, url, body, warnings = self._request(options)
        headers = {**self._auth_headers(), **self._headers, **dict(options.get("headers") or {})}
        content: bytes | None = None
        if body is not None:
            # wellformed: a lone surrogate in the prompt (a client's text, a cut delta) goes as
            # its escape, as the JavaScript SDKs send it.
            text = wellformed_json_text(
                json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            )
            info.request = {"body": text}
            content = text.encode("utf-8")
            headers.setdefault("content-type", "application/json")
            headers.setdefault("accept", "text/event-stream")
        headers = self._sign(method, url, headers, content)
        transformer = self._transformer(options)

        own_client = self._client is None
        client = self._client or httpx.AsyncClient(timeout=self._timeout, transport=self._transport)
        try:
            opened = await self._open(client, method, url, content, headers, signal, info, transformer)
            if isinstance(opened, APICallError):
                yield {"type": "error", "error": opened}
                return
            response, events, item = opened
            include_raw = bool(options.get("include_raw_chunks"))
            done = False
            try:
                yield {"type": "stream-start", "warnings": warnings}
                while item is not _END:
                    if item is _ABORTED:
                        raise AbortError(signal.reason if signal is not None else None)
                    if isinstance(item, APICallError):
                        item.is_retryable = False  # parts are out: a retry would repeat them
                        yield {"type": "error", "error": item}
                        return
                    assert isinstance(item, tuple)
                    event, data = item
                    if data == "[DONE]":
                        done = True
                        break
                    try:
                        value = _json_decode(data)
                    except msgspec.DecodeError as exc:
                        if include_raw:
                            yield {"type": "raw", "rawValue": data}
                        transformer.invalid_chunk()
                        yield {"type": "error", "error": self._invalid_json(response, data, exc)}
                    else:
                        if include_raw:
                            yield {"type": "raw", "rawValue": value}
                        for part in transformer.feed(event, value):
                            yield part
                    try:
                        item = await events.__anext__()
                    except StopAsyncIteration:
                        item = _END
                if not (done or transformer.ended):
                    yield {"type": "error", "error": self._cut(response, transformer, retryable=False)}
                    return
                for part in transformer.finish():
                    yield part
            finally:
                await events.aclose()
                await response.aclose()
        finally:
            if own_client:
                await client.aclose()

    def _invalid_json(self, response: httpx.Response, data: str, exc: Exception) -> APICallError:
        return self._error(
            f"Invalid JSON in SSE event data ({exc}): {shorten(data, 200, (self._api_key,))}",
            str(response.request.url),
            status=response.status_code,
            retryable=False,
            cause=exc,
        )

    async def _events(
        self, response: httpx.Response, signal: AbortSignal | None
    ) -> AsyncGenerator[object, None]:
        """(event, data) pairs; an APICallError if the transport fails; ``_ABORTED`` on abort."""
        if signal is None:
            async for item in self._read_events(response):
                yield item
            return
        # The reads run in their own task, so an abort interrupts a blocked read.
        async for item in abortable(self._read_events(response), signal):
            yield item
        if signal.aborted:
            yield _ABORTED

    async def _read_events(self, response: httpx.Response) -> AsyncIterator[object]:
        """The body's (event, data) pairs: SSE here; a provider with another framing overrides it."""
        url = str(response.request.url)
        try:
            async for sse in EventSource(response).aiter_sse():
                if sse.data or sse.event:
                    yield sse.event, sse.data
        except SSEError as exc:
            yield self._error(
                f"expected an SSE stream: {exc}", url, status=response.status_code, retryable=False, cause=exc
            )
        except httpx.TimeoutException as exc:
            yield self._error(f"stream read timed out: {type(exc).__name__}", url, retryable=True, cause=exc)
        except httpx.TransportError as exc:
            yield self._error(
                f"connection lost mid-stream: {exc or type(exc).__name__}", url, retryable=True, cause=exc
            )
