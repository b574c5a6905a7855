"""OAuth 2.1 for MCP servers behind authorization (the SDK's ``OAuthClientProvider``), with the
token-storage seam: where tokens and the registered client live between runs.

`oauth_client(...)` is the ``auth`` of an HTTP server entry of `MCPClient`:
``MCPClient(servers={"docs": {"url": ..., "auth": oauth_client(...)}})``. Discovery (protected
resource and authorization server metadata), dynamic client registration, client ID metadata
documents, pre-registered clients, PKCE, scope selection and step-up, and token refresh are the
SDK's; the app supplies the two user-facing steps: sending the user to the authorization URL and
receiving the redirect's ``code`` and ``state``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

__all__ = [
    "AuthorizationCodeResult",
    "FileTokenStorage",
    "MemoryTokenStorage",
    "TokenStorage",
    "oauth_client",
]


class MemoryTokenStorage:
    """Tokens and client registration in this process only (a new process authorizes again)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        """The tokens stored, if any."""
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Keep ``tokens`` (the SDK calls this after each grant and refresh)."""
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The registered client, if any."""
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Keep the client the authorization server registered."""
        self.client_info = client_info


class FileTokenStorage:
    """Tokens and client registration in one JSON file, readable by this user only (``0600``):
    a CLI or worker keeps its authorization across restarts."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()

    def _read(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ValueError(f"MCP token file {self.path}: not readable JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise ValueError(f"MCP token file {self.path}: expected a JSON object, got {type(data).__name__}")
        return data

    def _write(self, key: str, value: dict[str, object]) -> None:
        data = {**self._read(), key: value}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(self.path.suffix + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(temporary, self.path)  # never a half-written file after a crash

    async def get_tokens(self) -> OAuthToken | None:
        """The tokens in the file, if any."""
        value = self._read().get("tokens")
        return None if value is None else OAuthToken.model_validate(value)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Write ``tokens`` to the file (atomically, ``0600``)."""
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The registered client in the file, if any."""
        value = self._read().get("client_info")
        return None if value is None else OAuthClientInformationFull.model_validate(value)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Write the registered client to the file (atomically, ``0600``)."""
        self._write("client_info", client_info.model_dump(mode="json", exclude_none=True))


def oauth_client(
    server_url: str,
    *,
    redirect_uri: str,
    redirect_handler: Callable[[str], Awaitable[None]],
    callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]],
    storage: TokenStorage | None = None,
    client_name: str = "agentstream",
    scope: str | None = None,
    client_id: str | None = None,
    client_secret: str | None = None,
    client_metadata_url: str | None = None,
) -> OAuthClientProvider:
    """The ``auth`` for an MCP server at ``server_url`` that needs OAuth.

    ``redirect_handler(url)`` sends the user to the authorization URL; ``callback_handler()``
    returns the ``code`` and ``state`` the authorization server redirected to ``redirect_uri``
    with. ``client_id`` (and ``client_secret``) use a client registered beforehand (no dynamic
    registration); ``client_metadata_url`` is this client's metadata document URL, used as its
    client id where the server supports that. ``storage`` defaults to `MemoryTokenStorage`.
    """
    if not redirect_uri.startswith(("http://", "https://")):
        raise ValueError(f"oauth_client(redirect_uri=...) must be an http(s) URL, got {redirect_uri!r}")
    if client_secret is not None and client_id is None:
        raise ValueError("oauth_client(client_secret=...) needs the client_id it belongs to")
    store: TokenStorage = storage if storage is not None else MemoryTokenStorage()
    metadata = OAuthClientMetadata.model_validate(
        {
            "client_name": client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_basic" if client_secret else "none",
            **({"scope": scope} if scope else {}),
        }
    )
    provider = OAuthClientProvider(
        server_url,
        metadata,
        _Preregistered(store, metadata, client_id, client_secret) if client_id else store,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=client_metadata_url,
    )
    return provider


class _Preregistered:
    """``storage`` that answers a client registered beforehand until it holds one of its own."""

    def __init__(
        self, inner: TokenStorage, metadata: OAuthClientMetadata, client_id: str, client_secret: str | None
    ) -> None:
        self._inner = inner
        fields = metadata.model_dump(mode="json", exclude_none=True)
        self._client = OAuthClientInformationFull.model_validate(
            {**fields, "client_id": client_id, **({"client_secret": client_secret} if client_secret else {})}
        )

    async def get_tokens(self) -> OAuthToken | None:
        return await self._inner.get_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._inner.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return await self._inner.get_client_info() or self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._inner.set_client_info(client_info)
