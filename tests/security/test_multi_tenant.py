"""Two tenants through one ``chat_route`` at once: each run's instructions, model and tools come
from the request context the server built from the caller's principal, never from the client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from starlette.applications import Starlette

from agentstream import Agent, RequestContext, Tool, ToolContext
from agentstream._mastra import Mastra
from agentstream.server import RequestGuard, chat_route

from ._support import BASE, USAGE, x_user

TENANTS = {"alice": "acme", "bob": "globex"}


class TenantModel:
    """Calls its tenant's tool, then answers with what the tool returned; both tenants' first calls
    wait for each other, so the two runs are in flight together."""

    specification_version = "v2"
    provider = "test"

    def __init__(self, tenant: str, both_started: asyncio.Barrier) -> None:
        self.model_id = f"{tenant}-model"
        self.tenant = tenant
        self.barrier = both_started
        self.calls: list[dict[str, Any]] = []

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        self.calls.append(dict(options))
        return self._play(len(self.calls), options)

    async def _play(self, n: int, options: Any) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        if n == 1:
            await self.barrier.wait()
            tool = f"{self.tenant}_records"
            yield {"type": "tool-call", "toolCallId": f"{self.tenant}-1", "toolName": tool, "input": "{}"}
            yield {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}
            return
        result = next(p for m in options["prompt"] if m["role"] == "tool" for p in m["content"])
        text = json.dumps(result["output"]["value"], sort_keys=True)
        yield {"type": "text-start", "id": "t"}
        yield {"type": "text-delta", "id": "t", "delta": text}
        yield {"type": "text-end", "id": "t"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


def _records_tool(tenant: str) -> Tool:
    async def run(args: dict[str, Any], context: ToolContext) -> Any:
        return {
            "tenant": context.request_context["tenant"],
            "tool": tenant,
            "user": context.request_context["user"],
        }

    return Tool(id=f"{tenant}_records", description="records", input_schema={"type": "object"}, execute=run)


def _app(models: dict[str, TenantModel]) -> Starlette:
    agent = Agent(
        id="support",
        instructions=lambda request_context: f"You work for {request_context['tenant']} only.",
        model=lambda request_context: models[request_context["tenant"]],
        tools=lambda request_context: [_records_tool(request_context["tenant"])],
    )

    def context(request: Any, principal: object) -> RequestContext:
        return RequestContext(tenant=TENANTS[str(principal)], user=str(principal))

    route = chat_route(
        Mastra(agents={"support": agent}),
        "/api/chat/{agent_id}",
        guard=RequestGuard(auth=x_user),
        request_context=context,
    )
    return Starlette(routes=[route])


def _body(chat: str, **extra: Any) -> dict[str, Any]:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "show my records"}]}
    return {"id": chat, "trigger": "submit-message", "messages": [user], **extra}


async def _answer(client: httpx.AsyncClient, user: str, body: dict[str, Any]) -> tuple[int, str]:
    response = await client.post("/api/chat/support", json=body, headers={"x-user": user})
    text = "".join(
        json.loads(line[6:]).get("delta", "")
        for line in response.text.splitlines()
        if line.startswith("data: {") and '"text-delta"' in line
    )
    return response.status_code, text


async def test_two_tenants_at_once_each_get_their_own_agent() -> None:
    barrier = asyncio.Barrier(2)
    models = {tenant: TenantModel(tenant, barrier) for tenant in TENANTS.values()}
    transport = httpx.ASGITransport(app=_app(models))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        # bob also claims to be acme in the body: a client-sent context is not the run's context
        (alice_status, alice), (bob_status, bob) = await asyncio.wait_for(
            asyncio.gather(
                _answer(client, "alice", _body("c-alice")),
                _answer(client, "bob", _body("c-bob", requestContext={"tenant": "acme"})),
            ),
            timeout=30,
        )
    assert (alice_status, bob_status) == (200, 200)
    assert json.loads(alice) == {"tenant": "acme", "tool": "acme", "user": "alice"}
    assert json.loads(bob) == {"tenant": "globex", "tool": "globex", "user": "bob"}
    for tenant, model in models.items():
        first = model.calls[0]
        assert first["prompt"][0] == {"role": "system", "content": f"You work for {tenant} only."}
        assert [t["name"] for t in first["tools"]] == [f"{tenant}_records"]
        seen = json.dumps([c["prompt"] for c in model.calls])
        other = next(t for t in TENANTS.values() if t != tenant)
        assert other not in seen  # nothing of the other tenant reached this tenant's model
