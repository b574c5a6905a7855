"""Working memory (Mastra ``workingMemory``): a Markdown template or a JSON Schema the model keeps
filled in through the ``updateWorkingMemory`` tool, shown to it in a system message every turn.

Thread scope stores the text in ``thread.metadata.workingMemory`` (as Mastra does); resource scope
stores it per resource in the storage's snapshot domain under ``RESOURCE_NAMESPACE`` (our stores
have no resource table; docs/decisions/issue-27-working-memory.md). Templates are replaced whole;
schema data is deep-merged (objects merged, arrays replaced, ``None`` values dropped before the
merge, as Mastra's input validation drops them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "DEFAULT_TEMPLATE",
    "RESOURCE_NAMESPACE",
    "WorkingMemoryConfig",
    "deep_merge",
    "empty_from_schema",
    "instruction",
    "read_only_instruction",
    "tool_description",
    "tool_input_schema",
]

RESOURCE_NAMESPACE = "agentstream.memory.resource"
"""Snapshot-domain name under which resource-scoped working memory is kept (key: the resource id)."""

DEFAULT_TEMPLATE = (
    "\n# User Information\n- **First Name**: \n- **Last Name**: \n- **Location**: \n- **Occupation**: \n"
    "- **Interests**: \n- **Goals**: \n- **Events**: \n- **Facts**: \n- **Projects**: \n"
)
"""Mastra's default working-memory template (``getMergedThreadConfig``)."""

Scope = Literal["thread", "resource"]


@dataclass(frozen=True)
class WorkingMemoryConfig:
    """``Memory(working_memory={...})``: ``enabled``, ``scope`` (``"resource"`` by default, as
    Mastra), ``template`` (Markdown) or ``schema`` (a JSON Schema dict or a pydantic model class),
    ``read_only``."""

    enabled: bool = False
    scope: Scope = "resource"
    template: str | None = None
    schema: dict[str, Any] | None = None
    read_only: bool = False

    @classmethod
    def from_option(cls, value: Any) -> WorkingMemoryConfig:
        """The config from ``Memory(working_memory=...)`` (checked)."""
        if value is None or value is False:
            return cls()
        if value is True:
            return cls(enabled=True)
        if isinstance(value, WorkingMemoryConfig):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"working_memory must be a dict, True/False or None, got {value!r}")
        known = {"enabled", "scope", "template", "schema", "read_only"}
        unknown = set(value) - known
        if unknown:
            raise TypeError(
                f"unknown working_memory option(s): {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})"
            )
        scope = value.get("scope", "resource")
        if scope not in ("thread", "resource"):
            raise ValueError(f"working_memory scope must be 'thread' or 'resource', got {scope!r}")
        template = value.get("template")
        if template is not None and not isinstance(template, str):
            raise TypeError(f"working_memory template must be a Markdown string, got {template!r}")
        schema = _json_schema(value.get("schema"))
        if template is not None and schema is not None:
            raise ValueError("working_memory takes a template or a schema, not both")
        return cls(
            enabled=bool(value.get("enabled", True)),
            scope=scope,
            template=template,
            schema=schema,
            read_only=bool(value.get("read_only", False)),
        )

    @property
    def format(self) -> Literal["markdown", "json"]:
        """``"json"`` with a schema, else ``"markdown"``."""
        return "json" if self.schema is not None else "markdown"

    def template_text(self) -> str:
        """The Markdown template (Mastra's default when none is set)."""
        return self.template if self.template is not None else DEFAULT_TEMPLATE


def _json_schema(schema: Any) -> dict[str, Any] | None:
    if schema is None:
        return None
    if isinstance(schema, Mapping):
        return dict(schema)
    model_json_schema = getattr(schema, "model_json_schema", None)
    if callable(model_json_schema):  # a pydantic model class
        out: dict[str, Any] = model_json_schema()
        return out
    raise TypeError(f"working_memory schema must be a JSON Schema dict or a pydantic model, got {schema!r}")


def empty_from_schema(schema: Mapping[str, Any]) -> Any:
    """The empty object shown to the model as the template of a schema: strings ``""``, arrays
    ``[]``, objects recursively."""
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {key: empty_from_schema(sub) for key, sub in props.items()}
    if kind == "array":
        return []
    if kind == "string":
        return ""
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return False
    return None


def deep_merge(base: Any, update: Any) -> Any:
    """Objects merged key by key, anything else (arrays included) replaced; ``None`` in the update
    is dropped (Mastra's input validation removes null optionals before the merge)."""
    if not isinstance(base, dict) or not isinstance(update, dict):
        return _drop_none(update)
    out = dict(base)
    for key, value in update.items():
        if value is None:
            continue
        out[key] = deep_merge(out.get(key), value) if isinstance(value, dict) else _drop_none(value)
    return out


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    return value


# ------------------------------------------------------------------------------ what the model sees

_HEAD = (
    "WORKING_MEMORY_SYSTEM_INSTRUCTION:\n"
    "Store and update any conversation-relevant information by calling the updateWorkingMemory tool. "
    "If information might be referenced again - store it!\n\n"
    "Guidelines:\n"
    "1. Store anything that could be useful later in the conversation\n"
    "2. Update proactively when information changes, no matter how small\n"
    "3. Use {fmt} format for all data\n"
    "4. Act naturally - don't mention this system to users. Even though you're storing this "
    "information that doesn't make it your primary focus. Do not ask them generally for "
    '"information about yourself"\n'
)
_STRING_RULES = (
    "5. IMPORTANT: When calling updateWorkingMemory, the only valid parameter is the memory field. "
    "DO NOT pass an object.\n"
    "6. IMPORTANT: ALWAYS pass the data you want to store in the memory field as a string. "
    "DO NOT pass an object.\n"
    "7. IMPORTANT: Data must only be sent as a string no matter which format is used.\n"
)
_NOTES = (
    "Notes:\n"
    "- Update memory whenever referenced information changes\n"
    "- If you're unsure whether to store something, store it (eg if the user tells you information "
    "about themselves, call updateWorkingMemory immediately to update it)\n"
    "- This system is here so that you can maintain the conversation when your context window is "
    "very short. Update your working memory because you may need it to maintain the conversation "
    "without the full conversation history\n"
    "- Do not remove empty sections - you must include the empty sections along with the ones "
    "you're filling in\n"
    "- REMEMBER: the way you update your working memory is by calling the updateWorkingMemory tool "
    "with the entire {fmt} content. The system will store it for you. The user will not see it.\n"
    "- IMPORTANT: You MUST call updateWorkingMemory in every response to a prompt where you received "
    "relevant information.\n"
    "- IMPORTANT: Preserve the {fmt} formatting structure above while updating the content."
)


def _data_block(data: str | None) -> str:
    return f"<working_memory_data>\n{data if data is not None else 'null'}\n</working_memory_data>"


def instruction(config: WorkingMemoryConfig, data: str | None) -> str:
    """The system message of a writable working memory (Mastra's text, verbatim)."""
    if config.schema is not None:
        empty = json.dumps(empty_from_schema(config.schema), separators=(",", ":"), ensure_ascii=False)
        return (
            _HEAD.format(fmt="JSON")
            + "\n\n\n\n\nWhen working with json data, the object format below represents the template:\n"
            + empty
            + "\n\n"
            + _data_block(data)
            + "\n\n"
            + _NOTES.format(fmt="JSON")
        )
    return (
        _HEAD.format(fmt="Markdown")
        + _STRING_RULES
        + "\n\n<working_memory_template>\n"
        + config.template_text().strip()
        + "\n</working_memory_template>\n\n\n\n\n"
        + _data_block(data)
        + "\n\n"
        + _NOTES.format(fmt="Markdown")
    )


def read_only_instruction(data: str | None) -> str:
    """The system message of a read-only working memory (Mastra's text, verbatim)."""
    return (
        "WORKING_MEMORY_SYSTEM_INSTRUCTION (READ-ONLY):\n"
        "The following is your working memory - persistent information about the user and "
        "conversation collected over previous interactions. This data is provided for context to "
        "help you maintain continuity.\n\n" + _data_block(data) + "\n\nGuidelines:\n"
        "1. Use this information to provide personalized and contextually relevant responses\n"
        "2. Act naturally - don't mention this system to users. This information should inform your "
        "responses without being explicitly referenced\n"
        "3. This memory is read-only in the current session - you cannot update it\n\n"
        "Notes:\n"
        "- This system is here so that you can maintain the conversation when your context window is "
        "very short\n"
        "- The user will not see the working memory data directly"
    )


_DRAFT7 = "http://json-schema.org/draft-07/schema#"


def tool_description(config: WorkingMemoryConfig) -> str:
    if config.schema is not None:
        return (
            "Update the working memory with new information. Data is merged with existing memory - "
            "only include fields you want to add or update. To preserve existing data, omit the field "
            "entirely. Arrays are replaced entirely when provided, so pass the complete array or omit "
            "it to keep the existing values."
        )
    return (
        "Update the working memory with new information. Any data not included will be overwritten. "
        "Always pass data as string to the memory field. Never pass an object."
    )


def tool_input_schema(config: WorkingMemoryConfig) -> dict[str, Any]:
    """``{memory: string}`` for a template, ``{memory: <the schema>}`` for a schema."""
    if config.schema is not None:
        inner = {k: v for k, v in config.schema.items() if k != "$schema"}
        return {
            "$schema": _DRAFT7,
            "type": "object",
            "description": "The JSON formatted working memory content to store.",
            "properties": {"memory": inner},
            "required": ["memory"],
        }
    return {
        "$schema": _DRAFT7,
        "type": "object",
        "properties": {
            "memory": {
                "type": "string",
                "description": "The Markdown formatted working memory content to store. "
                "This MUST be a string. Never pass an object.",
            }
        },
        "required": ["memory"],
        "additionalProperties": False,
    }
