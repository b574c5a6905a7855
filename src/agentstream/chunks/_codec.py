"""JSON codec for chunks: Mastra's exact wire shape, lossless round trips, precise errors."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal, Union, cast

import msgspec

from .._wellformed import dumps_wellformed, loads_wellformed
from . import _agent, _agent_control, _agent_tools, _network, _workflow
from ._base import UNSET, BaseChunk, ChunkFrom, Payload
from ._data import DataChunk, NetworkEventChunk, UnknownChunk
from ._errors import ChunkDecodeError, from_validation_message

__all__ = [
    "Chunk",
    "UnknownMode",
    "chunk_from_dict",
    "chunk_to_dict",
    "decode_chunk",
    "encode_chunk",
    "error_to_dict",
    "format_date",
    "to_jsonable",
]

UnknownMode = Literal["raise", "keep"]

Chunk = BaseChunk | DataChunk | NetworkEventChunk | UnknownChunk
"""Any chunk. Match on the concrete classes (``case TextDelta(payload=p):``)."""


def _all_chunk_classes() -> dict[str, type[BaseChunk]]:
    registry: dict[str, type[BaseChunk]] = {}
    for module in (_agent, _agent_tools, _agent_control, _workflow, _network):
        for name in module.__all__:
            cls = getattr(module, name)
            if isinstance(cls, type) and issubclass(cls, BaseChunk):
                tag = cls.__struct_config__.tag
                assert isinstance(tag, str)
                registry[tag] = cls
    return registry


CHUNK_CLASSES: dict[str, type[BaseChunk]] = _all_chunk_classes()
"""``type`` → chunk class, for every fixed chunk type."""

_FROM_CHOICES = {"from": "one of " + ", ".join(repr(f.value) for f in ChunkFrom)}


def _wire_keys(cls: type[msgspec.Struct]) -> frozenset[str]:
    keys = frozenset(k for k in cls.__struct_encode_fields__ if k != "~extra")
    # The tag of a tagged struct is not one of its fields.
    return keys | {"type"} if cls.__struct_config__.tag_field else keys


_KNOWN_KEYS: dict[type[Any], frozenset[str]] = {}


def _known(cls: type[Any]) -> frozenset[str]:
    keys = _KNOWN_KEYS.get(cls)
    if keys is None:
        keys = _KNOWN_KEYS[cls] = _wire_keys(cls)
    return keys


def _payload_class(cls: type[BaseChunk]) -> type[Payload] | None:
    hint = msgspec.inspect.type_info(cls)
    assert isinstance(hint, msgspec.inspect.StructType)
    for field in hint.fields:
        if field.name == "payload" and isinstance(field.type, msgspec.inspect.StructType):
            payload_cls = field.type.cls
            assert issubclass(payload_cls, Payload)
            return payload_cls
    return None


_PAYLOAD_CLASSES: dict[type[Any], type[Payload] | None] = {
    c: _payload_class(c) for c in CHUNK_CLASSES.values()
}


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float, str)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _convert(data: Mapping[str, Any], cls: type[Any]) -> Any:
    try:
        return msgspec.convert(data, cls, str_keys=True)
    except msgspec.ValidationError as exc:
        raise from_validation_message(str(exc), choices=_FROM_CHOICES) from None


def _split_extras(data: Mapping[str, Any], cls: type[Any]) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """``data`` without the wire keys ``cls`` does not model (top level and ``payload``), and those
    keys: the chunk classes refuse unknown fields, so they are taken out before ``convert``."""
    top: dict[str, Any] = {}
    inner: dict[str, Any] = {}
    known_top = _known(cls)
    if not known_top.issuperset(data):
        top = {k: v for k, v in data.items() if k not in known_top}
        data = {k: v for k, v in data.items() if k in known_top}
    payload_cls = _PAYLOAD_CLASSES.get(cls)
    raw_payload = data.get("payload")
    if payload_cls is not None and (type(raw_payload) is dict or isinstance(raw_payload, Mapping)):
        known = _known(payload_cls)
        if not known.issuperset(raw_payload):
            inner = {k: v for k, v in raw_payload.items() if k not in known}
            data = {**data, "payload": {k: v for k, v in raw_payload.items() if k in known}}
    return data, top, inner


def _with_extras(chunk: Any, top: dict[str, Any], inner: dict[str, Any]) -> Any:
    """Attach the wire keys the class does not model, at the top level and in ``payload``."""
    if inner:
        chunk = msgspec.structs.replace(chunk, payload=msgspec.structs.replace(chunk.payload, extra=inner))
    if top:
        chunk = msgspec.structs.replace(chunk, extra=top)
    return chunk


def chunk_from_dict(data: Mapping[str, Any], *, unknown: UnknownMode = "raise") -> Chunk:
    """Build a chunk from its wire dict (camelCase keys, ``from``, ISO dates, base64 bytes)."""
    # ``type(...) is dict`` first: the ABC check is slow and nearly every input is a plain dict.
    if type(data) is not dict and not isinstance(data, Mapping):
        raise ChunkDecodeError("", "an object", _describe(data))
    chunk_type = data.get("type")
    if not isinstance(chunk_type, str):
        raise ChunkDecodeError(
            "type", "str", _describe(chunk_type) if "type" in data else "nothing (missing)"
        )
    cls: type[Any] | None = CHUNK_CLASSES.get(chunk_type)
    if cls is None:
        if chunk_type.startswith("data-"):
            cls = DataChunk
        elif chunk_type.startswith(("agent-execution-event-", "workflow-execution-event-")):
            cls = NetworkEventChunk
        elif unknown == "keep":
            return UnknownChunk(dict(data))
        else:
            raise ChunkDecodeError("type", "a known chunk type", repr(chunk_type))
    payload_cls = _PAYLOAD_CLASSES.get(cls)
    if payload_cls is not None:
        raw_payload = data.get("payload", _EMPTY)
        if type(raw_payload) is not dict and not isinstance(raw_payload, Mapping):
            raise ChunkDecodeError("payload", "an object", _describe(raw_payload))
    stripped, top, inner = _split_extras(data, cls)
    chunk: Chunk = _with_extras(_convert(stripped, cls), top, inner)
    return chunk


_decoder = msgspec.json.Decoder()
_typed_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(Union[tuple(CHUNK_CLASSES.values())])  # noqa: UP007
"""One pass from JSON to the chunk class its ``type`` names, no dict in between."""
_EMPTY: dict[str, Any] = {}


def decode_chunk(data: bytes | str | Mapping[str, Any], *, unknown: UnknownMode = "raise") -> Chunk:
    """Decode one chunk from JSON text/bytes or from an already-parsed dict.

    Raises ``ChunkDecodeError`` naming the JSON path, the expected type and what was found.
    Unknown ``type`` values raise unless ``unknown="keep"``, which returns an ``UnknownChunk``.
    """
    if type(data) is bytes or isinstance(data, (bytearray, memoryview, str)):
        try:
            chunk: Any = _typed_decoder.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            # Keys no class models (kept in ``extra``), open-ended types (``data-*``), lone
            # surrogates, bad input: the dict path, which also words the error.
            return _decode_via_dict(data, unknown)
        # A literal "~extra" key fills ``extra`` directly: only the dict path keeps it as a key.
        try:
            if not (chunk.extra or chunk.payload.extra):
                return chunk  # type: ignore[no-any-return]
        except AttributeError:  # no payload struct (``object``, a dict payload)
            if not chunk.extra:
                return chunk  # type: ignore[no-any-return]
        return _decode_via_dict(data, unknown)
    return chunk_from_dict(cast("Mapping[str, Any]", data), unknown=unknown)


def _decode_via_dict(data: bytes | bytearray | memoryview | str, unknown: UnknownMode) -> Chunk:
    try:
        parsed = _decoder.decode(data)
    except msgspec.DecodeError:
        parsed = _decode_lenient(data)
    return chunk_from_dict(parsed, unknown=unknown)


def _decode_lenient(data: bytes | bytearray | memoryview | str) -> Any:
    # JavaScript strings may hold lone UTF-16 surrogates (a delta cut inside an emoji) and JSON
    # can spell them as "\\ud83d"; msgspec rejects those, the stdlib parser keeps them.
    try:
        return loads_wellformed(data)
    except msgspec.DecodeError as exc:
        raise ChunkDecodeError("", "valid JSON", str(exc)) from None


def format_date(value: datetime) -> str:
    """ISO-8601 UTC with milliseconds and ``Z`` (JavaScript's ``Date.prototype.toJSON``)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def error_to_dict(error: BaseException) -> dict[str, Any]:
    """An exception as Mastra writes an Error: ``{name, message}`` plus JSON-safe public details;
    an error with a ``to_wire()`` method (a ``MastraError``'s own ``toJSON``) writes itself."""
    to_wire = getattr(error, "to_wire", None)
    if callable(to_wire):
        wire: dict[str, Any] = to_wire()
        return wire
    name = getattr(error, "name", None)
    out: dict[str, Any] = {
        "name": name if isinstance(name, str) else type(error).__name__,
        "message": str(error),
    }
    details = getattr(error, "details", None)
    if isinstance(details, Mapping):
        for key, value in details.items():
            out.setdefault(str(key), value)
    return out


def _enc_hook(value: Any) -> Any:
    if isinstance(value, BaseException):
        return error_to_dict(value)
    if isinstance(value, UnknownChunk):
        return value.raw
    if isinstance(value, (set, frozenset)):
        return list(value)
    # Typed results (``Usage``) know their wire JSON; duck-typed so chunks need not import them.
    to_wire = getattr(type(value), "to_wire", None)
    if callable(to_wire):
        return to_wire(value)
    # Tool results and task payloads may be pydantic models; duck-typed so chunks need no pydantic.
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    raise NotImplementedError(f"cannot encode {type(value).__name__} in a chunk")


_encoder = msgspec.json.Encoder(enc_hook=_enc_hook)


def _needs_dict_path(chunk: Any) -> bool:
    if chunk.extra:
        return True
    payload = getattr(chunk, "payload", None)
    return isinstance(payload, Payload) and bool(payload.extra or payload._date_fields)


def _payload_to_dict(payload: Payload) -> dict[str, Any]:
    out: dict[str, Any] = dict(payload.extra)
    built = msgspec.to_builtins(payload, enc_hook=_enc_hook)
    built.pop("~extra", None)
    out.update(built)
    if payload._date_fields:
        names = dict(zip(payload.__struct_fields__, payload.__struct_encode_fields__, strict=True))
        for name in payload._date_fields:
            value = getattr(payload, name)
            if isinstance(value, datetime):
                out[names[name]] = format_date(value)
    return out


def chunk_to_dict(chunk: Chunk) -> dict[str, Any]:
    """The chunk's wire dict: camelCase keys, ``from``, absent optionals, ISO dates, base64 bytes."""
    if isinstance(chunk, UnknownChunk):
        return chunk.raw
    out: dict[str, Any] = dict(chunk.extra)
    built = msgspec.to_builtins(chunk, enc_hook=_enc_hook)
    built.pop("~extra", None)
    payload = getattr(chunk, "payload", None)
    if isinstance(payload, Payload):
        built["payload"] = _payload_to_dict(payload)
    out.update(built)
    return out


def encode_chunk(chunk: Chunk) -> bytes:
    """Compact JSON bytes of the chunk, exactly Mastra's wire shape."""
    try:
        if isinstance(chunk, UnknownChunk) or _needs_dict_path(chunk):
            return _encoder.encode(chunk_to_dict(chunk))
        return _encoder.encode(chunk)
    except UnicodeEncodeError:
        # Lone surrogates cannot be UTF-8: write them as JSON escapes, as JavaScript does.
        return dumps_wellformed(chunk_to_dict(chunk), _enc_hook)


def to_jsonable(value: Any) -> Any:
    """Plain JSON data for any value that may hold chunks, exceptions, bytes, dates or pydantic models.

    ``UNSET`` (an "any JSON" field that was never given) becomes ``None``. A value that is not JSON
    data raises ``NotImplementedError`` naming its type.
    """
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if value is UNSET:
        return None
    if isinstance(value, (BaseChunk, DataChunk, NetworkEventChunk, UnknownChunk)):
        return chunk_to_dict(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime):
        return format_date(value)
    return msgspec.to_builtins(value, enc_hook=_enc_hook)
