"""Follow-up chat requests that answer a suspended run: approvals (v6/v7), ``resumeData`` (Mastra's
form), and who may send them (the chat and owner that saw the run suspend)."""

from __future__ import annotations

from typing import Any

import pytest

from agentstream import Mastra
from agentstream.agent import Agent
from agentstream.ai_sdk import ChatRequestError, handle_chat_stream
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext

USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}


def _tool_call(tool: str, args: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": "call-1", "toolName": tool, "input": args},
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]


def _text(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


class World:
    """A Mastra whose agent books a table (approval needed) or asks which time (suspends)."""

    def __init__(self, tool: str = "book_table", answer: str = "Booked.") -> None:
        self.ran: list[dict[str, Any]] = []
        self.model = ScriptedModel([_tool_call(tool, '{"name":"Luigi"}'), _text(answer)])

        async def book(args: dict[str, Any], ctx: ToolContext) -> Any:
            self.ran.append(args)
            return {"booked": args["name"]}

        async def pick(args: dict[str, Any], ctx: ToolContext) -> Any:
            if ctx.resume_data is None:
                return await ctx.suspend({"question": "Which time?"})
            self.ran.append({**args, **ctx.resume_data})
            return {"time": ctx.resume_data["time"]}

        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        tools = [
            Tool(
                id="book_table", description="Book", input_schema=schema, execute=book, require_approval=True
            ),
            Tool(
                id="pick_time",
                description="Ask",
                input_schema=schema,
                execute=pick,
                resume_schema={
                    "type": "object",
                    "properties": {"time": {"type": "string"}},
                    "required": ["time"],
                },
            ),
        ]
        self.mastra = Mastra(agents={"a": Agent(id="a", instructions="x", model=self.model, tools=tools)})

    async def chat(
        self, body: dict[str, Any], *, version: str = "v7", owner: str | None = "alice"
    ) -> list[Any]:
        stream = await handle_chat_stream(
            mastra=self.mastra,
            agent_id="a",
            params=body,
            version=version,
            owner=owner,  # type: ignore[arg-type]
        )
        return [part async for part in stream]


def _first(chat_id: str = "c1") -> dict[str, Any]:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "book Luigi"}]}
    return {"id": chat_id, "messages": [user], "trigger": "submit-message"}


def _answer(
    first: dict[str, Any], parts: list[Any], *, approved: bool, reason: str | None = None
) -> dict[str, Any]:
    """The follow-up ``addToolApprovalResponse`` + ``sendAutomaticallyWhen`` sends."""
    request = next(p for p in parts if p["type"] == "tool-approval-request")
    approval: dict[str, Any] = {"id": request["approvalId"], "approved": approved}
    if reason is not None:
        approval["reason"] = reason
    assistant = {
        "id": parts[0]["messageId"],
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "tool-book_table",
                "toolCallId": request["toolCallId"],
                "state": "approval-responded",
                "input": {"name": "Luigi"},
                "approval": approval,
            },
        ],
    }
    return {**first, "messages": [*first["messages"], assistant], "messageId": assistant["id"]}


async def test_approve_continues_the_same_message() -> None:
    world = World()
    first = _first()
    parts = await world.chat(first)
    assert [p["type"] for p in parts][-2:] == ["tool-approval-request", "data-tool-call-approval"]
    assert world.ran == []
    rest = await world.chat(_answer(first, parts, approved=True))
    assert rest[0] == {"type": "start", "messageId": parts[0]["messageId"]}
    assert rest[1] == {"type": "tool-output-available", "toolCallId": "call-1", "output": {"booked": "Luigi"}}
    assert [p.get("delta") for p in rest if p["type"] == "text-delta"] == ["Booked."]
    assert rest[-1] == {"type": "finish", "finishReason": "stop"}
    assert world.ran == [{"name": "Luigi"}]


async def test_decline_tells_the_model_and_skips_the_tool() -> None:
    world = World(answer="Not booked.")
    first = _first()
    parts = await world.chat(first)
    rest = await world.chat(_answer(first, parts, approved=False, reason="too pricey"))
    assert {"type": "tool-output-denied", "toolCallId": "call-1"} in rest
    assert world.ran == []
    assert "too pricey" in str(world.model.calls[-1].prompt)
    assert rest[-1]["type"] == "finish"


async def test_the_same_approval_twice_runs_the_tool_once() -> None:
    world = World()
    first = _first()
    parts = await world.chat(first)
    answer = _answer(first, parts, approved=True)
    await world.chat(answer)
    with pytest.raises(ChatRequestError) as refused:
        await world.chat(answer)
    assert world.ran == [{"name": "Luigi"}]
    assert refused.value.status_code == 409
    run_id = parts[-1]["data"]["runId"]
    assert str(refused.value) == (
        f"run {run_id!r} is not waiting for an answer any more: it has finished or is being resumed "
        "(each suspension is answered once; send a new message to go on)"
    )
    assert refused.value.path == "approvals[0]"


async def test_resume_data_for_a_finished_run_or_another_call_is_refused_409_v5() -> None:
    world = World(tool="pick_time", answer="At eight.")
    first = _first()
    parts = await world.chat(first, version="v5")
    run_id = next(p for p in parts if p["type"] == "data-tool-call-suspended")["data"]["runId"]
    wrong = {**first, "resumeData": {"time": "20:00"}, "runId": run_id, "toolCallId": "call-2"}
    with pytest.raises(ChatRequestError) as refused:
        await world.chat(wrong, version="v5")
    assert (refused.value.status_code, refused.value.path) == (409, "toolCallId")
    assert str(refused.value) == f"run {run_id!r} waits for an answer to tool call 'call-1', not 'call-2'"
    follow = {**wrong, "toolCallId": "call-1"}
    await world.chat(follow, version="v5")
    with pytest.raises(ChatRequestError) as refused:
        await world.chat(follow, version="v5")
    assert (refused.value.status_code, refused.value.path) == (409, "runId")
    assert "is not waiting for an answer any more" in str(refused.value)
    assert world.ran == [{"name": "Luigi", "time": "20:00"}]


async def test_resume_data_in_the_body_resumes_a_suspended_tool_v5() -> None:
    world = World(tool="pick_time", answer="At eight.")
    first = _first()
    parts = await world.chat(first, version="v5")
    suspended = next(p for p in parts if p["type"] == "data-tool-call-suspended")
    assert suspended["data"]["suspendPayload"] == {"question": "Which time?"}
    follow = {
        **first,
        "resumeData": {"time": "20:00"},
        "runId": suspended["data"]["runId"],
        "toolCallId": "call-1",
    }
    rest = await world.chat(follow, version="v5")
    assert rest[0] == {"type": "tool-output-available", "toolCallId": "call-1", "output": {"time": "20:00"}}
    assert world.ran == [{"name": "Luigi", "time": "20:00"}]


@pytest.mark.parametrize(
    ("who", "chat_id"),
    [("mallory", "c1"), ("alice", "another-chat"), (None, "c1")],
    ids=["another-owner", "another-chat", "no-owner"],
)
async def test_only_the_chat_and_owner_that_saw_the_suspension_may_answer(
    who: str | None, chat_id: str
) -> None:
    world = World()
    first = _first()
    parts = await world.chat(first)
    stolen = _answer(first, parts, approved=True)
    stolen["id"] = chat_id
    with pytest.raises(ChatRequestError) as refused:
        await world.chat(stolen, owner=who)
    assert refused.value.status_code == 403
    run_id = parts[-1]["data"]["runId"]
    body_form = {**_first(chat_id), "resumeData": {"approved": True}, "runId": run_id}
    with pytest.raises(ChatRequestError) as refused:
        await world.chat(body_form, owner=who, version="v5")
    assert refused.value.status_code == 403
    # A fresh run may not take the suspended run's id either (it would replace its snapshot).
    with pytest.raises(ChatRequestError) as refused:
        await world.chat({**_first(chat_id), "runId": run_id}, owner=who)
    assert refused.value.status_code == 403
    assert world.ran == []
    # The owner can still answer.
    await world.chat(_answer(first, parts, approved=True))
    assert world.ran == [{"name": "Luigi"}]


async def test_an_unknown_run_gets_the_same_refusal_as_another_users() -> None:
    world = World()
    body = {**_first(), "resumeData": {"approved": True}, "runId": "no-such-run"}
    with pytest.raises(ChatRequestError) as refused:
        await world.chat(body)
    assert refused.value.status_code == 403
    assert str(refused.value) == "run 'no-such-run' is not waiting for an answer from this chat"


@pytest.mark.parametrize(
    ("approval", "path"),
    [
        ({"id": "run-1:call-1", "approved": True}, "messages[1].parts[0].approval.id"),
        ({"id": "::call-1", "approved": True}, "messages[1].parts[0].approval.id"),
        ({"id": "run-1::call-1", "approved": "yes"}, "messages[1].parts[0].approval"),
        ({"id": "run-1::call-1", "approved": True, "reason": 3}, "messages[1].parts[0].approval.reason"),
    ],
)
async def test_malformed_approvals_are_refused_naming_the_field(approval: dict[str, Any], path: str) -> None:
    world = World()
    part = {
        "type": "tool-x",
        "toolCallId": "call-1",
        "state": "approval-responded",
        "input": {},
        "approval": approval,
    }
    body = {
        **_first(),
        "messages": [*_first()["messages"], {"id": "m", "role": "assistant", "parts": [part]}],
    }
    with pytest.raises(ChatRequestError) as refused:
        await world.chat(body)
    assert refused.value.status_code == 400
    assert refused.value.path == path


async def test_an_answer_only_in_an_earlier_message_is_refused() -> None:
    world = World()
    answered = {"type": "tool-x", "toolCallId": "c0", "state": "approval-responded", "input": {}}
    answered["approval"] = {"id": "r0::c0", "approved": True}
    waiting = {"type": "tool-x", "toolCallId": "c1", "state": "approval-requested", "input": {}}
    waiting["approval"] = {"id": "r1::c1"}
    messages = [
        *_first()["messages"],
        {"id": "m0", "role": "assistant", "parts": [answered]},
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "and?"}]},
        {"id": "m1", "role": "assistant", "parts": [waiting]},
    ]
    with pytest.raises(ChatRequestError, match="earlier assistant message"):
        await world.chat({**_first(), "messages": messages})


async def test_v5_ignores_approval_parts_and_answers_as_a_new_turn() -> None:
    world = World()
    first = _first()
    parts = await world.chat(first, version="v6")
    follow = _answer(first, parts, approved=True)
    # v5 clients have no approval parts; an old-protocol server answers the messages as they are.
    rest = await world.chat(follow, version="v5")
    assert not any(p["type"] == "tool-output-available" for p in rest)
    assert world.ran == []
