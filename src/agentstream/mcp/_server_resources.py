"""Resources, resource templates and prompts an `MCPServer` serves besides its tools.

Each is a small dataclass holding what ``*/list`` shows and the function that answers ``*/read`` or
``prompts/get`` (sync or async). Mastra's ``MCPServer({resources, prompts})`` takes callbacks of
the same roles; here each entry carries its own.
"""

from __future__ import annotations

import base64
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from ._server_notify import Notifier

__all__ = ["MCPPrompt", "MCPResource", "MCPResourceTemplate", "ServedExtras"]

ReadResult = str | bytes


@dataclass(frozen=True)
class MCPResource:
    """A resource at ``uri``; ``read()`` returns its text (``str``) or bytes (sent as a blob)."""

    uri: str
    name: str
    read: Callable[[], Any]
    description: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True)
class MCPResourceTemplate:
    """Resources matching ``uri_template`` (RFC 6570 level 1: ``{var}``); ``read(uri, params)``."""

    uri_template: str
    name: str
    read: Callable[[str, dict[str, str]], Any]
    description: str | None = None
    mime_type: str | None = None
    complete: Callable[[str, str, dict[str, str]], Any] | None = None
    """``complete(variable, partial_value, other_variables)`` → suggested values (``completion/complete``)."""

    def match(self, uri: str) -> dict[str, str] | None:
        """The template's variables in ``uri`` (``None``: the URI is not one of this template's)."""
        parts = re.split(r"\{(\w+)\}", self.uri_template)
        pattern = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/]+)" for i, p in enumerate(parts))
        found = re.fullmatch(pattern, uri)
        return None if found is None else found.groupdict()


@dataclass(frozen=True)
class MCPPrompt:
    """A prompt; ``get(arguments)`` returns its messages: ``[{"role", "content": {type, ...}}]``
    (a ``str`` content is a text item)."""

    name: str
    get: Callable[[dict[str, str]], Any]
    description: str | None = None
    arguments: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    """``[{"name", "description"?, "required"?}]``."""
    complete: Callable[[str, str, dict[str, str]], Any] | None = None
    """``complete(argument, partial_value, other_arguments)`` → suggested values (``completion/complete``)."""


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    value = fn(*args)
    return await value if inspect.isawaitable(value) else value


def _contents(uri: str, mime_type: str | None, value: Any) -> types.ReadResourceResult:
    if isinstance(value, bytes):
        blob = base64.b64encode(value).decode()
        item: Any = types.BlobResourceContents(uri=uri, mime_type=mime_type, blob=blob)
    elif isinstance(value, str):
        item = types.TextResourceContents(uri=uri, mime_type=mime_type, text=value)
    else:
        raise TypeError(f"resource {uri!r}: read() must return str or bytes, got {type(value).__name__}")
    return types.ReadResourceResult(contents=[item])


class ServedExtras:
    """The lowlevel handlers for the resources, templates and prompts given (none when empty)."""

    def __init__(
        self,
        resources: Sequence[MCPResource],
        templates: Sequence[MCPResourceTemplate],
        prompts: Sequence[MCPPrompt],
        notifier: Notifier,
    ) -> None:
        self.notifier = notifier
        self.resources = {r.uri: r for r in resources}
        self.templates = list(templates)
        self.prompts = {p.name: p for p in prompts}
        for kind, items, cls in (
            ("resources", resources, MCPResource),
            ("resource_templates", templates, MCPResourceTemplate),
            ("prompts", prompts, MCPPrompt),
        ):
            for item in items:
                if not isinstance(item, cls):
                    raise TypeError(
                        f"MCPServer {kind} entries must be {cls.__name__}, got {type(item).__name__}"
                    )

    def handlers(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.resources or self.templates:
            out.update(
                on_list_resources=self._list_resources,
                on_list_resource_templates=self._list_templates,
                on_read_resource=self._read,
                on_subscribe_resource=self.notifier.on_subscribe,
                on_unsubscribe_resource=self.notifier.on_unsubscribe,
            )
        if self.prompts:
            out.update(on_list_prompts=self._list_prompts, on_get_prompt=self._get_prompt)
        if any(p.complete for p in self.prompts.values()) or any(t.complete for t in self.templates):
            out.update(on_completion=self._complete)
        return out

    async def _complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        others = dict(params.context.arguments or {}) if params.context is not None else {}
        complete: Callable[[str, str, dict[str, str]], Any] | None = None
        if isinstance(ref, types.PromptReference) and ref.name in self.prompts:
            complete = self.prompts[ref.name].complete
        elif isinstance(ref, types.ResourceTemplateReference):
            complete = next((t.complete for t in self.templates if t.uri_template == ref.uri), None)
        values = (
            []
            if complete is None
            else list(await _call(complete, params.argument.name, params.argument.value, others))
        )
        for value in values:
            if not isinstance(value, str):
                raise TypeError(f"complete() must return strings, got {type(value).__name__} {value!r}")
        # the protocol caps one answer at 100 values and says how many there were
        return types.CompleteResult(
            completion=types.Completion(values=values[:100], total=len(values), has_more=len(values) > 100)
        )

    async def _list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=r.uri, name=r.name, description=r.description, mime_type=r.mime_type)
                for r in self.resources.values()
            ]
        )

    async def _list_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=t.uri_template, name=t.name, description=t.description, mime_type=t.mime_type
                )
                for t in self.templates
            ]
        )

    async def _read(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri in self.resources:
            resource = self.resources[uri]
            return _contents(uri, resource.mime_type, await _call(resource.read))
        for template in self.templates:
            variables = template.match(uri)
            if variables is not None:
                return _contents(uri, template.mime_type, await _call(template.read, uri, variables))
        from mcp.shared.exceptions import MCPError

        raise MCPError(code=-32002, message=f"Resource not found: {uri}")

    async def _list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=p.name,
                    description=p.description,
                    arguments=[types.PromptArgument.model_validate(dict(a)) for a in p.arguments] or None,
                )
                for p in self.prompts.values()
            ]
        )

    async def _get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        prompt = self.prompts.get(params.name)
        if prompt is None:
            from mcp.shared.exceptions import MCPError

            raise MCPError(code=-32602, message=f"Unknown prompt: {params.name}")
        arguments = dict(params.arguments or {})
        missing = [a["name"] for a in prompt.arguments if a.get("required") and a["name"] not in arguments]
        if missing:
            from mcp.shared.exceptions import MCPError

            raise MCPError(
                code=-32602, message=f"prompt {prompt.name!r}: missing required argument(s) {missing}"
            )
        messages = []
        for message in await _call(prompt.get, arguments):
            content = message["content"]
            if isinstance(content, str):
                content = {"type": "text", "text": content}
            messages.append(types.PromptMessage.model_validate({"role": message["role"], "content": content}))
        return types.GetPromptResult(description=prompt.description, messages=messages)
