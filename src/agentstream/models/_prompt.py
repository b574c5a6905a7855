"""Helpers shared by the prompt converters (AI SDK V2 prompt → provider request bodies)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

__all__ = [
    "InvalidPromptError",
    "camel_to_snake",
    "file_data",
    "tool_input_json",
    "tool_output_text",
]

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


class InvalidPromptError(ValueError):
    """The prompt cannot be expressed in the provider's request format."""


def camel_to_snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


def file_data(part: dict[str, Any]) -> tuple[str, str | None]:
    """A file part's data as ``("url", url)`` or ``("base64", b64)``; second item is unused for urls."""
    data = part.get("data")
    if isinstance(data, bytes | bytearray | memoryview):
        return "base64", base64.b64encode(bytes(data)).decode("ascii")
    if isinstance(data, str):
        if data.startswith(("http://", "https://", "data:")):
            return "url", data
        return "base64", data
    url = getattr(data, "geturl", None)
    if callable(url):
        return "url", str(url())
    raise InvalidPromptError(f"unsupported file data of type {type(data).__name__}")


def media_type(part: dict[str, Any]) -> str:
    mt = str(part.get("mediaType") or part.get("mimeType") or "application/octet-stream")
    return "image/jpeg" if mt == "image/*" else mt


def data_url(part: dict[str, Any]) -> str:
    kind, value = file_data(part)
    assert value is not None
    return value if kind == "url" else f"data:{media_type(part)};base64,{value}"


def tool_input_json(value: Any) -> str:
    """A tool-call part's ``input`` as the JSON string providers expect."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_output_text(part: dict[str, Any]) -> tuple[str, bool]:
    """A tool-result part's output as text plus whether it is an error (V2 ``output`` union)."""
    output = part.get("output")
    if output is None and "result" in part:  # older V1-style parts
        result = part["result"]
        return (result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)), bool(
            part.get("isError")
        )
    if not isinstance(output, dict):
        return json.dumps(output, ensure_ascii=False), False
    kind = output.get("type")
    value = output.get("value")
    is_error = kind in ("error-text", "error-json")
    if kind in ("text", "error-text") and isinstance(value, str):
        return value, is_error
    return json.dumps(value, ensure_ascii=False), is_error


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if p.get("type") == "text")


def provider_opts(holder: dict[str, Any], key: str) -> dict[str, Any]:
    opts = holder.get("providerOptions") or holder.get("providerMetadata") or {}
    value = opts.get(key) if isinstance(opts, dict) else None
    return value if isinstance(value, dict) else {}
