"""``Memory``'s working-memory methods (Mastra ``getWorkingMemory`` / ``updateWorkingMemory`` /
``getWorkingMemoryTemplate`` / ``getSystemMessage``), kept apart from the run plumbing."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec

from ..storage import Storage
from ._scope import MemoryScope
from ._working import RESOURCE_NAMESPACE, WorkingMemoryConfig, instruction, read_only_instruction
from ._working_tool import WORKING_MEMORY_TOOL, working_memory_tool

__all__ = ["WorkingMemoryMethods"]


class WorkingMemoryMethods:
    """Mixed into `Memory`."""

    working_memory: WorkingMemoryConfig

    def _store(self) -> Storage:
        raise NotImplementedError

    def now(self) -> datetime:
        """The memory clock's current time (UTC)."""
        raise NotImplementedError

    # ----------------------------------------------------------------------------- working memory

    async def get_working_memory(self, *, thread_id: str, resource_id: str | None = None) -> str | None:
        """The stored working-memory text (Markdown, or the JSON string of a schema's data)."""
        config = self.working_memory
        store = self._store()
        if config.scope == "resource":
            if resource_id is None:
                thread = await store.find_thread(thread_id)
                resource_id = thread.resource_id if thread is not None else None
            if resource_id is None:
                return None
            value = await store.load_workflow_snapshot(RESOURCE_NAMESPACE, resource_id)
            if isinstance(value, dict) and isinstance(value.get("workingMemory"), str):
                return str(value["workingMemory"])
            return None
        thread = await store.find_thread(thread_id)
        if thread is None or not thread.metadata:
            return None
        found = thread.metadata.get("workingMemory")
        return found if isinstance(found, str) else None

    async def update_working_memory(
        self, text: str | Mapping[str, Any], *, thread_id: str, resource_id: str | None = None
    ) -> str:
        """Store working memory (replacing it; a dict is stored as its JSON) and return the text."""
        store = self._store()
        value = text if isinstance(text, str) else json.dumps(text, separators=(",", ":"), ensure_ascii=False)
        if self.working_memory.scope == "resource":
            if resource_id is None:
                resource_id = (await store.get_thread(thread_id)).resource_id
            await store.persist_workflow_snapshot(RESOURCE_NAMESPACE, resource_id, {"workingMemory": value})
            return value
        thread = await store.get_thread(thread_id)
        metadata = {**(thread.metadata or {}), "workingMemory": value}
        await store.save_thread(msgspec.structs.replace(thread, metadata=metadata, updated_at=self.now()))
        return value

    def get_working_memory_template(self) -> dict[str, str] | None:
        """``{"format": "markdown" | "json", "content"}`` (Mastra ``getWorkingMemoryTemplate``)."""
        config = self.working_memory
        if not config.enabled:
            return None
        if config.schema is not None:
            return {
                "format": "json",
                "content": json.dumps(config.schema, separators=(",", ":"), ensure_ascii=False),
            }
        return {"format": "markdown", "content": config.template_text().strip()}

    async def get_system_message(
        self, *, thread_id: str, resource_id: str | None = None, read_only: bool = False
    ) -> str | None:
        """The working-memory system message the model gets on this thread (``None``: disabled)."""
        config = self.working_memory
        if not config.enabled:
            return None
        data = await self.get_working_memory(thread_id=thread_id, resource_id=resource_id)
        if read_only or config.read_only:
            return read_only_instruction(data)
        return instruction(config, data)

    def run_tools(self, scope: MemoryScope) -> dict[str, Any]:
        """The tools this memory gives a run on ``scope`` (``updateWorkingMemory`` when working
        memory is on and writable)."""
        config = self.working_memory
        if not config.enabled or config.read_only or scope.read_only:
            return {}
        return {WORKING_MEMORY_TOOL: working_memory_tool(self, scope)}
