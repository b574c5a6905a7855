"""The one owner rule: which principal owns a stored thing (a chat's stream, a suspended run, a
workflow run, an approval follow-up), for every route.

`owner_key` turns the `RequestGuard`'s principal into the owner string every store keeps (a run's
``resource_id``, a chat run's recorded owner, a job's owner); `stream_owner` is its digest, which
is what a `StreamStore` records (no user name is written there). Routes call `owner_key` /
`principal_stream_owner` and nothing else, so a principal cannot stand for one owner in one place
and another elsewhere (issue 22: workflow runs used ``str(principal)``, an object's ``repr``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

__all__ = ["owner_key", "principal_stream_owner", "stream_owner"]


def owner_key(principal: object) -> str | None:
    """The owner a principal stands for: ``None`` without auth, a string or number as is, anything
    else by its type and ``id`` (attribute or key), else by its own ``repr``.

    A principal with no ``id`` whose ``repr`` is ``object``'s (``<User object at 0x…>``, a new one
    per request) has no stable identity: a `TypeError` (a server error, logged; the client gets a
    bare 500) rather than runs nobody can reach again."""
    if principal is None:
        return None
    if isinstance(principal, (str, int)) and not isinstance(principal, bool):
        return str(principal)
    ident = principal.get("id") if isinstance(principal, Mapping) else getattr(principal, "id", None)
    if ident is None and type(principal).__repr__ is object.__repr__:
        raise TypeError(
            f"the auth hook returned a {type(principal).__name__} with no 'id' and no repr of its own: "
            "return a string, or an object with an 'id' attribute or key"
        )
    return f"{type(principal).__name__}:{ident if ident is not None else repr(principal)}"


def stream_owner(owner: str | None) -> str | None:
    """The owner a stream is recorded under: a digest of the principal's `owner_key` (``None``
    without auth), so no user name or record is written to the store."""
    return None if owner is None else hashlib.sha256(owner.encode()).hexdigest()


def principal_stream_owner(principal: object) -> str | None:
    """`stream_owner` of the principal's `owner_key`: whom a stream claimed now belongs to."""
    return stream_owner(owner_key(principal))
