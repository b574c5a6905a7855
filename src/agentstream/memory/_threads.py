"""``Memory``'s thread and message API (Mastra ``listThreads`` / ``getThreadById`` /
``updateThread`` / ``deleteThread`` / ``listMessages`` / ``deleteMessages``): a thread's deletion
takes its messages, thread state, working memory and embeddings with it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

from ..storage import MessagePage, Storage, ThreadRecord
from ._recall import index_name
from ._vector import VectorStore

__all__ = ["ThreadMethods"]


class ThreadMethods:
    """Mixed into `Memory`."""

    vector: VectorStore
    _dimension: int | None

    def _store(self) -> Storage:
        raise NotImplementedError

    def now(self) -> datetime:
        """The memory clock's current time (UTC)."""
        raise NotImplementedError

    async def list_threads(self, *, resource_id: str) -> list[ThreadRecord]:
        """The resource's threads, oldest first."""
        if not isinstance(resource_id, str) or not resource_id:
            raise ValueError(f"list_threads needs a resource_id, got {resource_id!r}")
        return await self._store().list_threads(resource_id=resource_id)

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        """The thread, or ``None``."""
        return await self._store().find_thread(thread_id)

    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> ThreadRecord:
        """Set the title and/or replace the metadata (`NotFoundError` if there is no such thread)."""
        store = self._store()
        thread = await store.get_thread(thread_id)
        changes: dict[str, Any] = {"updated_at": self.now()}
        if title is not None:
            changes["title"] = title
        if metadata is not None:
            changes["metadata"] = dict(metadata)
        return await store.save_thread(msgspec.structs.replace(thread, **changes))

    async def delete_thread(self, thread_id: str) -> bool:
        """Delete the thread with its messages, thread state (thread-scoped working memory is in
        its metadata) and the embeddings of its messages; ``False`` if there was no such thread."""
        deleted = await self._store().delete_thread(thread_id)
        if self._dimension is not None:
            await self.vector.delete(index_name(self._dimension), filter={"thread_id": thread_id})
        return deleted

    async def list_messages(
        self, thread_id: str, *, page: int | None = None, per_page: int | None = None
    ) -> MessagePage:
        """The thread's messages, oldest first (a 0-based page of ``per_page`` when given)."""
        return await self._store().list_messages(thread_id, page=page, per_page=per_page)

    async def delete_messages(self, message_ids: Sequence[str]) -> int:
        """Delete messages by id (their embeddings stay until the thread is deleted: a recalled
        id that no longer exists is skipped)."""
        return await self._store().delete_messages(list(message_ids))
