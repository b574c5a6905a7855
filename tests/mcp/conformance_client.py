"""The client command for ``@modelcontextprotocol/conformance client``: the server URL is the last
argument, the scenario is in ``MCP_CONFORMANCE_SCENARIO``; it drives `agentstream.mcp.MCPClient`.

Every scenario connects, lists the tools and calls each one with arguments made from its input
schema (the suite's servers check what arrives), then disconnects. Exit 1 on any error.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from agentstream.mcp import MCPClient, MCPToolError

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


async def main(url: str, scenario: str) -> int:
    if scenario.startswith("auth/"):
        # Not built (conformance-baseline.yml): say so at once rather than wait out the suite's timeout.
        print(f"{scenario}: MCPClient has no OAuth support yet", file=sys.stderr)
        return 1
    servers = {"conformance": {"url": url, "timeout": 20}}
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
