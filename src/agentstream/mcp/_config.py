"""The ``servers={name: {...}}`` entries of `MCPClient`, checked once at construction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_TIMEOUT", "HttpServer", "ServerSpec", "StdioServer", "parse_servers"]

DEFAULT_TIMEOUT = 60.0
"""Seconds a request may wait for its answer (Mastra's default request timeout is 60 s too)."""

_STDIO_KEYS = {"command", "args", "env", "cwd", "timeout", "protocol_version"}
_HTTP_KEYS = {"url", "headers", "timeout", "auth", "protocol_version"}
PROTOCOL_VERSIONS = ("2025-11-25", "2026-07-28")
"""What ``protocol_version`` may pin (Mastra's ``protocolVersion``); absent: negotiated."""


@dataclass(frozen=True)
class StdioServer:
    """A server the client launches and talks to over its stdin/stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    protocol_version: str | None = None


@dataclass(frozen=True)
class HttpServer:
    """A server reached over streamable HTTP (legacy HTTP+SSE as the fallback)."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    protocol_version: str | None = None
    auth: Any = None
    """An ``httpx2.Auth`` applied to every request: the SDK's ``OAuthClientProvider`` (OAuth 2.1
    with dynamic client registration; its ``storage`` is the token-storage seam), or any other."""


ServerSpec = StdioServer | HttpServer


def _strings(name: str, key: str, value: Any, kind: type) -> Any:
    if kind is list:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise TypeError(f"servers[{name!r}].{key} must be a list of strings, got {value!r}")
        return tuple(value)
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise TypeError(f"servers[{name!r}].{key} must be a dict of strings to strings, got {value!r}")
    return dict(value)


def _timeout(name: str, raw: Mapping[str, Any]) -> float:
    value = raw.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"servers[{name!r}].timeout must be a positive number of seconds, got {value!r}")
    return float(value)


def _parse_one(name: str, raw: Any) -> ServerSpec:
    if isinstance(raw, (StdioServer, HttpServer)):
        return raw
    if not isinstance(raw, Mapping):
        raise TypeError(f"servers[{name!r}] must be a dict with 'command' or 'url', got {type(raw).__name__}")
    has_command, has_url = "command" in raw, "url" in raw
    if has_command == has_url:
        raise ValueError(
            f"servers[{name!r}] needs exactly one of 'command' (stdio) or 'url' (HTTP), got keys {sorted(raw)}"
        )
    allowed = _STDIO_KEYS if has_command else _HTTP_KEYS
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ValueError(
            f"servers[{name!r}]: unknown key(s) {unknown} for a {'stdio' if has_command else 'HTTP'} "
            f"server (allowed: {sorted(allowed)})"
        )
    timeout = _timeout(name, raw)
    version = raw.get("protocol_version")
    if version is not None and version not in PROTOCOL_VERSIONS:
        raise ValueError(
            f"servers[{name!r}].protocol_version must be one of {list(PROTOCOL_VERSIONS)} "
            f"(or absent, to negotiate), got {version!r}"
        )
    if has_command:
        command, cwd = raw["command"], raw.get("cwd")
        if not isinstance(command, str) or not command:
            raise TypeError(f"servers[{name!r}].command must be a non-empty string, got {command!r}")
        if cwd is not None and not isinstance(cwd, str):
            raise TypeError(f"servers[{name!r}].cwd must be a string, got {cwd!r}")
        return StdioServer(
            command=command,
            args=_strings(name, "args", raw.get("args", []), list),
            env=_strings(name, "env", raw.get("env", {}), dict),
            cwd=cwd,
            timeout=timeout,
            protocol_version=version,
        )
    url = str(raw["url"])
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"servers[{name!r}].url must be an http(s) URL, got {url!r}")
    auth = raw.get("auth")
    if auth is not None and not callable(getattr(auth, "auth_flow", None)):
        raise TypeError(
            f"servers[{name!r}].auth must be an httpx2.Auth (e.g. mcp.client.auth.OAuthClientProvider), "
            f"got {type(auth).__name__}"
        )
    headers = _strings(name, "headers", raw.get("headers", {}), dict)
    return HttpServer(url=url, headers=headers, timeout=timeout, auth=auth, protocol_version=version)


def parse_servers(servers: Any) -> dict[str, ServerSpec]:
    """``servers`` as typed specs; a bad entry raises naming the server and the key."""
    if not isinstance(servers, Mapping) or not servers:
        raise ValueError("MCPClient(servers=...) must be a non-empty dict of server name -> config")
    out: dict[str, ServerSpec] = {}
    for name, raw in servers.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"MCPClient server names must be non-empty strings, got {name!r}")
        out[name] = _parse_one(name, raw)
    return out
