"""The ``updateWorkingMemory`` tool a run gets when working memory is on and writable."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ._scope import MemoryScope
from ._working import _drop_none, deep_merge, tool_description, tool_input_schema

if TYPE_CHECKING:
    from ..tools import Tool, ToolContext
    from ._working_methods import WorkingMemoryMethods

__all__ = ["WORKING_MEMORY_TOOL", "WORKING_MEMORY_TOOL_ID", "working_memory_tool"]

WORKING_MEMORY_TOOL = "updateWorkingMemory"
"""The tool's name, as the model sees it."""
WORKING_MEMORY_TOOL_ID = "update-working-memory"
"""Mastra's ``createTool({id})`` of the tool (``Memory.list_tools_json``)."""


def working_memory_tool(memory: WorkingMemoryMethods, scope: MemoryScope) -> Tool:
    """The tool for one run on ``scope``. ``tools`` is imported at call time: memory sits below it
    in the layer table (tests/test_layers.py) and only runs hand it to the agent."""
    from ..tools import Tool

    class _WorkingMemoryTool(Tool):
        """Null values are dropped before the input is validated, as Mastra's validation drops null
        optionals (a ``name: null`` update keeps the stored name: working-memory-schema-merge)."""

        def validation_error(self, args: Any) -> tuple[Any, dict[str, Any] | None]:
            return super().validation_error(_drop_none(args))

    config = memory.working_memory

    async def execute(args: Any, ctx: ToolContext) -> dict[str, Any]:
        value = args.get("memory") if isinstance(args, dict) else None
        if config.schema is not None:
            current = await memory.get_working_memory(
                thread_id=scope.thread_id, resource_id=scope.resource_id
            )
            try:
                base = json.loads(current) if current else {}
            except ValueError:
                base = {}
            if isinstance(value, str):
                value = json.loads(value)
            await memory.update_working_memory(
                deep_merge(base, value), thread_id=scope.thread_id, resource_id=scope.resource_id
            )
        else:
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            await memory.update_working_memory(text, thread_id=scope.thread_id, resource_id=scope.resource_id)
        return {"success": True}

    return _WorkingMemoryTool(
        id=WORKING_MEMORY_TOOL,
        description=tool_description(config),
        input_schema=tool_input_schema(config),
        execute=execute,
    )
