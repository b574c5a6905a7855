"""AI SDK V2 prompts, tools and JSON Schemas → the Gemini API's ``generateContent`` request shapes.

Behaviour follows ``@ai-sdk/google`` (``convert-to-google-generative-ai-messages.ts``,
``google-prepare-tools.ts``, ``convert-json-schema-to-openapi-schema.ts``): system messages become
``systemInstruction`` and may only lead the prompt; assistant turns are ``role: "model"``; tool
results go back as ``functionResponse`` parts of a ``user`` turn; a thought signature the model gave a
part (``providerOptions.google.thoughtSignature``) is sent back on that part, as Gemini 3 requires.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._prompt import InvalidPromptError, file_data, media_type, provider_opts

__all__ = ["convert_to_google_contents", "google_tools", "openapi_schema"]

_json_decode = msgspec.json.Decoder().decode

# Provider-defined tool id → the Gemini ``tools[]`` entry it becomes.
_PROVIDER_TOOLS = {
    "google.google_search": "googleSearch",
    "google.code_execution": "codeExecution",
    "google.url_context": "urlContext",
}


def _signature(part: dict[str, Any]) -> dict[str, Any]:
    value = provider_opts(part, "google").get("thoughtSignature")
    return {"thoughtSignature": str(value)} if value is not None else {}


def _user_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        return {"text": part["text"]}
    if kind in ("file", "image"):
        if kind == "image":
            part = {**part, "data": part.get("image"), "mediaType": part.get("mediaType") or "image/jpeg"}
        mime = media_type(part)
        mime = "image/jpeg" if mime == "image/*" else mime
        how, value = file_data(part)
        if how == "url":
            return {"fileData": {"mimeType": mime, "fileUri": value}}
        return {"inlineData": {"mimeType": mime, "data": value}}
    raise InvalidPromptError(f"unsupported user content part {kind!r} for Google")


def _model_part(part: dict[str, Any]) -> dict[str, Any] | None:
    kind = part.get("type")
    if kind in ("text", "reasoning"):
        if not part.get("text"):
            return None
        out: dict[str, Any] = {"text": part["text"]}
        if kind == "reasoning":
            out["thought"] = True
        return {**out, **_signature(part)}
    if kind == "tool-call":
        value = part.get("input")
        if isinstance(value, str):
            value = _json_decode(value) if value else {}
        return {"functionCall": {"name": part["toolName"], "args": value}, **_signature(part)}
    if kind == "file":
        how, data = file_data(part)
        if how == "url":
            raise InvalidPromptError("file URLs in assistant messages are not supported by Google")
        return {"inlineData": {"mimeType": media_type(part), "data": data}}
    return None  # provider-executed tool results are not replayed to Gemini


def _tool_response(part: dict[str, Any]) -> dict[str, Any]:
    output = part.get("output")
    if isinstance(output, dict) and output.get("type") == "content":
        content: Any = "\n".join(
            str(item.get("text", "")) for item in output.get("value") or [] if item.get("type") == "text"
        )
    elif isinstance(output, dict):
        content = output.get("value")
    else:
        content = part.get("result", output)
    name = part["toolName"]
    return {"functionResponse": {"name": name, "response": {"name": name, "content": content}}}


def convert_to_google_contents(
    prompt: list[dict[str, Any]],
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """AI SDK V2 prompt → (``systemInstruction``, ``contents``)."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    for message in prompt:
        role = message.get("role")
        content: Any = message.get("content")
        if role == "system":
            if contents:
                raise InvalidPromptError(
                    "system messages are only supported at the beginning of the conversation for Google"
                )
            system.append({"text": content})
        elif role == "user":
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
            contents.append({"role": "user", "parts": [_user_part(p) for p in parts]})
        elif role == "assistant":
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
            converted = [c for c in (_model_part(p) for p in parts) if c is not None]
            contents.append({"role": "model", "parts": converted})
        elif role == "tool":
            results = [_tool_response(p) for p in content if p.get("type") == "tool-result"]
            contents.append({"role": "user", "parts": results})
        else:
            raise InvalidPromptError(f"unsupported message role {role!r}")
    return ({"parts": system} if system else None), contents


def openapi_schema(schema: Any, *, root: bool = True) -> Any:
    """A JSON Schema in the OpenAPI 3.0 subset Gemini accepts (``convertJSONSchemaToOpenAPISchema``).

    ``const`` becomes a one-value ``enum``, ``["string", "null"]`` becomes ``nullable``, keywords Gemini
    refuses (``$schema``, ``additionalProperties``, ``$id``…) are dropped, and an empty object schema
    at the root becomes no schema at all (Gemini refuses ``{"type": "object"}`` without properties).
    """
    if not isinstance(schema, dict):
        return schema
    if root and _empty_object(schema):
        return None
    out: dict[str, Any] = {}
    for key in ("description", "required", "format", "enum", "minLength", "maxLength", "pattern"):
        if key in schema:
            out[key] = schema[key]
    for key in ("minimum", "maximum", "minItems", "maxItems", "title", "default"):
        if key in schema:
            out[key] = schema[key]
    if "const" in schema:
        out["enum"] = [schema["const"]]
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) < len(kind):
            out["nullable"] = True
        out["type"] = kinds[0] if len(kinds) == 1 else kinds
    elif kind is not None:
        out["type"] = kind
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: openapi_schema(v, root=False) for k, v in schema["properties"].items()}
    if "items" in schema:
        items = schema["items"]
        out["items"] = (
            [openapi_schema(i, root=False) for i in items]
            if isinstance(items, list)
            else openapi_schema(items, root=False)
        )
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            branches = [openapi_schema(s, root=False) for s in schema[key]]
            if key == "anyOf" and any(_is_null(s) for s in schema[key]):
                branches = [b for b, s in zip(branches, schema[key], strict=True) if not _is_null(s)]
                out["nullable"] = True
                if len(branches) == 1:
                    out.update(branches[0])
                    continue
            out[key] = branches
    return out


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _empty_object(schema: dict[str, Any]) -> bool:
    return (
        schema.get("type") == "object"
        and not schema.get("properties")
        and not schema.get("additionalProperties")
        and not schema.get("description")
    )


def google_tools(
    tools: list[dict[str, Any]], choice: dict[str, Any] | None, warnings: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None]:
    """Function and provider-defined tools → (``tools``, ``toolConfig``) (``google-prepare-tools.ts``)."""
    if not tools:
        return None, None
    declarations: list[dict[str, Any]] = []
    builtin: list[dict[str, Any]] = []
    for tool in tools:
        if tool.get("type", "function") == "function":
            entry: dict[str, Any] = {"name": tool["name"], "description": tool.get("description") or ""}
            params = openapi_schema(tool.get("inputSchema") or {"type": "object"})
            if params is not None:
                entry["parameters"] = params
            declarations.append(entry)
        elif tool.get("type") == "provider-defined" and tool.get("id") in _PROVIDER_TOOLS:
            builtin.append({_PROVIDER_TOOLS[tool["id"]]: dict(tool.get("args") or {})})
        else:
            warnings.append({"type": "unsupported-tool", "tool": tool})
    out = builtin + ([{"functionDeclarations": declarations}] if declarations else [])
    config: dict[str, Any] | None = None
    kind = (choice or {}).get("type")
    if declarations and kind in ("auto", "none", "required"):
        mode = {"auto": "AUTO", "none": "NONE", "required": "ANY"}[str(kind)]
        config = {"functionCallingConfig": {"mode": mode}}
    elif declarations and kind == "tool":
        config = {
            "functionCallingConfig": {
                "mode": "ANY",
                "allowedFunctionNames": [str((choice or {})["toolName"])],
            }
        }
    return out or None, config
