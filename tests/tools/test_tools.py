from __future__ import annotations

import pydantic
import pytest

from agentstream.agent import Agent
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext, ToolInputValidationError, tool


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


def test_tool_decorator_schema_and_validation() -> None:
    assert add.id == "add" and add.description == "Add two numbers."
    schema = add.definition()["inputSchema"]
    assert schema["required"] == ["a"]
    _parsed, err = add.validation_error({"b": 2})
    assert err is not None and "- a: Invalid input: expected number, received undefined" in err["message"]
    assert err["validationErrors"]["fields"]["a"]["errors"]


def test_json_schema_validation_messages() -> None:
    t = Tool(
        id="w",
        description="",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        execute=lambda i, c: i,
    )
    _, err = t.validation_error({"city": 3})
    assert err is not None and "city: Invalid input: expected string, received number" in err["message"]
    assert t.validation_error({"city": "Oslo"})[1] is None


class Args(pydantic.BaseModel):
    n: int


def _steps(call_input: str) -> list[list[dict[str, object]]]:
    return [
        [
            {"type": "tool-call", "toolCallId": "c1", "toolName": "prog", "input": call_input},
            {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}},
        ],
        [
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": "ok"},
            {"type": "text-end", "id": "t"},
            {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}},
        ],
    ]


async def test_writer_output_sync_tool_in_thread_and_raising_tool() -> None:
    def prog(args: Args, ctx: ToolContext) -> dict[str, int]:
        ctx.writer.write({"progress": args.n})
        ctx.writer.custom({"type": "data-note", "data": {"n": args.n}})
        return {"done": args.n}

    agent = Agent(id="a", model=ScriptedModel(_steps('{"n": 3}')), tools=[Tool("prog", "p", Args, prog)])
    out = agent.stream("go")
    types = []
    async for chunk in out.full_stream:
        types.append(chunk.type)
    assert types.index("tool-output") < types.index("tool-result")
    assert "data-note" in types
    assert (await out.tool_results)[0].payload.result == {"done": 3}

    async def boom(args: Args, ctx: ToolContext) -> None:
        raise RuntimeError("kaput")

    model = ScriptedModel(_steps('{"n": 1}'))
    agent = Agent(id="a", model=model, tools=[Tool("prog", "p", Args, boom)])
    out = agent.stream("go")
    chunks = [c async for c in out.full_stream]
    err = next(c for c in chunks if c.type == "tool-error")
    assert str(err.payload.error) == "kaput"
    tool_msg = model.calls[1].prompt[-1]
    assert tool_msg["content"][0]["output"] == {"type": "error-text", "value": "kaput"}


async def test_suspend_ends_the_run_suspended() -> None:
    seen: list[object] = []

    async def grab(args: Args, ctx: ToolContext) -> None:
        seen.append(ctx.resume_data)
        await ctx.suspend({"need": "x"})

    agent = Agent(id="a", model=ScriptedModel(_steps('{"n": 1}')), tools=[Tool("prog", "p", Args, grab)])
    output = agent.stream("go")
    chunks = [c async for c in output.full_stream]
    assert chunks[-1].type == "tool-call-suspended"
    assert chunks[-1].payload.suspend_payload == {"need": "x"}
    assert not any(c.type in ("tool-error", "step-finish", "finish") for c in chunks)
    assert seen == [None] and output.status == "suspended"


def test_hitl_fields_are_checked() -> None:
    with pytest.raises(TypeError, match="require_approval must be True or False"):
        Tool("t", "x", {}, lambda i, c: None, require_approval="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="resume_schema must be a JSON Schema dict or a pydantic model"):
        Tool("t", "x", {}, lambda i, c: None, resume_schema=42)  # type: ignore[arg-type]
    assert Tool("t", "x", {}, lambda i, c: None, resume_schema=Args).may_suspend
    assert not Tool("t", "x", {}, lambda i, c: None).may_suspend


def test_resume_data_is_validated_naming_the_field() -> None:
    book = Tool("book", "b", {}, lambda i, c: None, resume_schema=Args)
    assert book.validate_resume_data({"n": 2}).n == 2
    with pytest.raises(ToolInputValidationError, match=r"resume data for tool 'book'.*\n- n: "):
        book.validate_resume_data({"n": "many"})
    schema_json = book.resume_schema_json()
    assert schema_json is not None and '"n"' in schema_json and " " not in schema_json


def test_tool_rejects_bad_definition() -> None:
    with pytest.raises(ValueError):
        Tool("", "x", {}, lambda i, c: None)


def test_background_config_field_and_decorator() -> None:
    from agentstream.background import ToolBackgroundConfig

    assert add.background is None
    plain = Tool("t", "d", {"type": "object"}, lambda i, c: None, background=True)
    assert plain.background == ToolBackgroundConfig(enabled=True)

    @tool(background={"enabled": True, "timeout_ms": 5_000, "max_retries": 2})
    async def slow(topic: str) -> str:
        """Slow."""
        return topic

    assert isinstance(slow, Tool)
    assert slow.background == ToolBackgroundConfig(enabled=True, timeout_ms=5_000, max_retries=2)
    assert "_background" not in str(slow.definition())  # injected only when an agent runs it in a Mastra
    with pytest.raises(ValueError, match="default_disposition"):
        Tool("t", "d", {}, lambda i, c: None, background={"enabled": True, "default_disposition": "later"})
    with pytest.raises(TypeError):
        Tool("t", "d", {}, lambda i, c: None, background="yes")


async def test_a_result_that_is_not_json_data_is_a_tool_error_naming_its_type() -> None:
    class Opaque:
        pass

    async def opaque(args: Args, ctx: ToolContext) -> Opaque:
        return Opaque()

    model = ScriptedModel(_steps('{"n": 1}'))
    agent = Agent(id="a", model=model, tools=[Tool("prog", "p", Args, opaque)])
    chunks = [c async for c in agent.stream("go").full_stream]
    err = next(c for c in chunks if c.type == "tool-error")
    assert "Opaque" in str(err.payload.error)
