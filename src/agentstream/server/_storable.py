"""Refusing, at the edge, what a database cannot store: a NUL character (U+0000).

PostgreSQL refuses NUL in ``text`` and in ``jsonb`` (``\\u0000 cannot be converted to text``), so
an id or a message holding one used to reach the store and fail there (a 500, or an error chunk
quoting the database). Every route refuses it first with a 400 naming the field. (A lone surrogate, the other
thing UTF-8 storage cannot hold, is accepted: ``JSON.stringify`` writes one as an escape, and the
stores keep it escaped, ``chunks.dumps_wellformed`` and ``storage.postgres.pg_json_text``.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..ai_sdk import ChatRequestError

__all__ = ["check_path_params", "check_storable"]

_NUL = "\x00"


def _refuse(path: str, where: str) -> ChatRequestError:
    return ChatRequestError(
        f"{where} contains a NUL character (U+0000), which cannot be stored; remove it",
        path=path or None,
    )


def _key_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def check_storable(value: Any, path: str = "") -> None:
    """Raise `ChatRequestError` (400, ``path`` = the field) for the first string, or object key,
    holding a NUL anywhere in the decoded JSON ``value``."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if _NUL in item:
                raise _refuse(where, where or "the request body")
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if isinstance(key, str) and _NUL in key:
                    raise _refuse(where, f"a key of {where or 'the request body'}")
                stack.append((child, _key_path(where, str(key))))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))


def check_path_params(params: Mapping[str, Any]) -> None:
    """400 for a path parameter (``chat_id``, ``run_id``, ``workflow_id``, ``agent_id``) holding a
    NUL (``%00`` in the URL)."""
    for name, value in params.items():
        if isinstance(value, str) and _NUL in value:
            raise _refuse(name, f"path parameter {name}")
