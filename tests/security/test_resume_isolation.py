"""Over HTTP: a user cannot approve, decline or resume another user's suspended run."""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request

from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.server import AuthError, RequestGuard, chat_route
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext

from ._support import client_for, error_of

USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}
TOKENS = {"alice-token": "alice", "bob-token": "bob"}


def _auth(request: Request) -> str:
    user = TOKENS.get(request.headers.get("authorization", "").removeprefix("Bearer "))
    if user is None:
        raise AuthError("unknown token")
    return user


def _app(ran: list[Any]) -> Starlette:
    async def transfer(args: dict[str, Any], ctx: ToolContext) -> Any:
        ran.append(args)
        return {"sent": args["amount"]}

    steps = [
        [
            {"type": "stream-start", "warnings": []},
            {"type": "tool-call", "toolCallId": "call-1", "toolName": "transfer", "input": '{"amount":500}'},
            {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
        ],
        [
            {"type": "stream-start", "warnings": []},
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": "Sent."},
            {"type": "text-end", "id": "t"},
            {"type": "finish", "finishReason": "stop", "usage": USAGE},
        ],
    ]
    schema = {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}
    tool = Tool(
        id="transfer", description="Send money", input_schema=schema, execute=transfer, require_approval=True
    )
    agent = Agent(id="bank", instructions="x", model=ScriptedModel(steps), tools=[tool])
    route = chat_route(
        Mastra(agents={"bank": agent}),
        "/api/chat/{agent_id}",
        heartbeat_ms=0,
        version="v7",
        guard=RequestGuard(auth=_auth),
    )
    return Starlette(routes=[route])


def _events(text: str) -> list[dict[str, Any]]:
    frames = [f.removeprefix("data: ") for f in text.split("\n\n") if f.startswith("data: ")]
    return [json.loads(f) for f in frames if f != "[DONE]"]


def _approval(chat_id: str, message_id: str, approval_id: str) -> dict[str, Any]:
    part = {
        "type": "tool-transfer",
        "toolCallId": "call-1",
        "state": "approval-responded",
        "input": {"amount": 500},
        "approval": {"id": approval_id, "approved": True},
    }
    return {
        "id": chat_id,
        "trigger": "submit-message",
        "messageId": message_id,
        "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "send 500"}]},
            {"id": message_id, "role": "assistant", "parts": [{"type": "step-start"}, part]},
        ],
    }


async def test_another_user_cannot_answer_a_suspended_run() -> None:
    ran: list[Any] = []
    app = _app(ran)
    alice = {"authorization": "Bearer alice-token", "content-type": "application/json"}
    bob = {"authorization": "Bearer bob-token", "content-type": "application/json"}
    first = {"id": "chat-a", "trigger": "submit-message", "messages": [_approval("", "", "")["messages"][0]]}
    async with client_for(app) as client:
        r = await client.post("/api/chat/bank", json=first, headers=alice)
        events = _events(r.text)
        request = next(e for e in events if e["type"] == "tool-approval-request")
        run_id = next(e for e in events if e["type"] == "data-tool-call-approval")["data"]["runId"]
        message_id = events[0]["messageId"]

        # Bob replays Alice's approval id, in her chat id and in his own; and Mastra's body form.
        for chat_id in ("chat-a", "chat-b"):
            r = await client.post(
                "/api/chat/bank", json=_approval(chat_id, message_id, request["approvalId"]), headers=bob
            )
            assert r.status_code == 403, r.text
            assert "not waiting for an answer from this chat" in error_of(r)["message"]
            body = {"id": chat_id, "messages": [], "resumeData": {"approved": True}, "runId": run_id}
            r = await client.post("/api/chat/bank", json=body, headers=bob)
            assert r.status_code == 403, r.text
        assert ran == []

        r = await client.post(
            "/api/chat/bank", json=_approval("chat-a", message_id, request["approvalId"]), headers=alice
        )
        assert r.status_code == 200
        events = _events(r.text)
        assert {"type": "tool-output-available", "toolCallId": "call-1", "output": {"sent": 500}} in events
        assert ran == [{"amount": 500}]
        # The reply to Bob never said whether the run existed, or anything of Alice's: exactly the
        # run id he sent. (Not `"500" not in message`: the random run id itself may contain "500".)
        late = await client.post(
            "/api/chat/bank", json=_approval("chat-b", message_id, request["approvalId"]), headers=bob
        )
        assert late.status_code == 403
        assert error_of(late)["message"] == f"run {run_id!r} is not waiting for an answer from this chat"
