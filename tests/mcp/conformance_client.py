"""The client command for ``@modelcontextprotocol/conformance client``: the server URL is the last
argument, the scenario is in ``MCP_CONFORMANCE_SCENARIO``; it drives `agentstream.mcp.MCPClient`.

Every scenario connects, lists the tools and calls each one with arguments made from its input
schema (the suite's servers check what arrives), then disconnects. Exit 1 on any error.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any
from urllib.parse import parse_qs, urlparse

from agentstream.mcp import AuthorizationCodeResult, MCPClient, MCPToolError, oauth_client

_SAMPLES: dict[str, Any] = {
    "number": 1,
    "integer": 1,
    "string": "test",
    "boolean": True,
    "array": [],
    "object": {},
}


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """A value for each property of ``schema`` (its default or enum's first value, else by type)."""
    out: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if "default" in prop:
            out[name] = prop["default"]
        elif prop.get("enum"):
            out[name] = prop["enum"][0]
        else:
            kind = prop.get("type", "string")
            out[name] = _SAMPLES.get(kind if isinstance(kind, str) else kind[0], "test")
    return out


def accept_with_defaults(server_name: str, request: dict[str, Any]) -> dict[str, Any]:
    """Accept an elicitation with each field's schema default (what a user keeping them would send)."""
    properties = (request.get("requestedSchema") or {}).get("properties") or {}
    content = {name: prop["default"] for name, prop in properties.items() if "default" in prop}
    return {"action": "accept", "content": content}


class HeadlessBrowser:
    """The user's side of an authorization: the suite's authorization server approves at once, so
    following the authorization URL by hand yields the redirect's ``code`` and ``state``."""

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | None = None

    async def redirect(self, authorization_url: str) -> None:
        import httpx

        async with httpx.AsyncClient(follow_redirects=False) as http:
            answer = await http.get(authorization_url)
        location = answer.headers.get("location")
        if not location:
            raise RuntimeError(f"authorization answered {answer.status_code} without a redirect")
        query = parse_qs(urlparse(location).query)
        self.result = AuthorizationCodeResult(
            code=query["code"][0],
            state=(query.get("state") or [None])[0],
            iss=(query.get("iss") or [None])[0],
        )

    async def callback(self) -> AuthorizationCodeResult:
        if self.result is None:
            raise RuntimeError("no authorization redirect was received")
        return self.result


def server_entry(url: str, scenario: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"url": url, "timeout": 20}
    if scenario.startswith("auth/"):
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        browser = HeadlessBrowser()
        entry["auth"] = oauth_client(
            url,
            redirect_uri="http://127.0.0.1:9/callback",
            redirect_handler=browser.redirect,
            callback_handler=browser.callback,
            client_name="agentstream-conformance",
            client_id=context.get("client_id"),
            client_secret=context.get("client_secret"),
            client_metadata_url="https://conformance-test.local/client-metadata.json",
        )
    return entry


async def main(url: str, scenario: str) -> int:
    servers = {"conformance": server_entry(url, scenario)}
    async with MCPClient(servers=servers, on_elicitation=accept_with_defaults) as client:
        tools = await client.list_tools()
        print(f"{scenario}: {len(tools)} tools", file=sys.stderr)
        for tool in tools.values():
            args = sample_arguments(tool.input_schema if isinstance(tool.input_schema, dict) else {})
            parsed, invalid = tool.validation_error(args)
            if invalid is not None:
                print(f"{tool.id}: {invalid['message']}", file=sys.stderr)
                continue
            try:
                result = await tool.execute(parsed, None)  # type: ignore[arg-type]
            except MCPToolError as exc:
                result = f"isError: {exc}"
            print(f"{tool.id}: {str(result)[:200]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", ""))))
