"""A server to kill: ``python -m tests.security._crash_app <sqlite path> <port>``.

Everything it keeps is in the SQLite file: the demo agent with a memory thread (``t1`` of
``alice``) behind ``POST /api/chat``, and a workflow ``slow`` (one step that writes a line and
then waits a minute) behind the workflow routes, and an agent ``approver`` (``POST
/api/agents-chat/approver``) whose tool needs approval and, once approved, marks
``<sqlite path>.tool-started`` and waits a minute. `test_crash_recovery` kills it with SIGKILL
mid-answer / mid-run, then starts it again on the same file.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from agentstream import Mastra
from agentstream._demo import demo_agent
from agentstream.memory import Memory
from agentstream.storage import SQLiteStore
from agentstream.workflows import StepContext, create_step, create_workflow

THREAD = {"thread": "t1", "resource": "alice"}


async def _slow(context: StepContext) -> dict[str, Any]:
    context.writer.write({"status": "started"})
    await asyncio.sleep(60)
    return {"done": True}


USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}


def _approver(path: str) -> Any:
    from pathlib import Path

    from agentstream.agent import Agent
    from agentstream.testing import ScriptedModel
    from agentstream.tools import Tool

    async def deploy(args: dict[str, Any], ctx: Any) -> Any:
        Path(path + ".tool-started").write_text("started")
        await asyncio.sleep(60)
        return {"deployed": True}

    call = {"type": "tool-call", "toolCallId": "call-1", "toolName": "deploy", "input": "{}"}
    steps = [
        [{"type": "stream-start", "warnings": []}, call, {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}],
        [{"type": "stream-start", "warnings": []}, {"type": "finish", "finishReason": "stop", "usage": USAGE}],
    ]  # fmt: skip
    tool = Tool(
        id="deploy",
        description="deploy",
        input_schema={"type": "object"},
        execute=deploy,
        require_approval=True,
    )
    return Agent(id="approver", instructions="x", model=ScriptedModel(steps), tools=[tool])


def build(path: str) -> Any:
    from starlette.applications import Starlette

    from agentstream.server import chat_route, workflow_cancel_route, workflow_route

    slow = create_workflow(id="slow").then(create_step(id="wait", execute=_slow)).commit()
    mastra = Mastra(
        agents={"demo": demo_agent("demo", memory=Memory()), "approver": _approver(path)},
        workflows={"slow": slow},
        storage=SQLiteStore(path),
    )
    return Starlette(
        routes=[
            chat_route(mastra, "/api/chat", agent="demo", default_options={"memory": THREAD}),
            chat_route(mastra, "/api/agents-chat/{agent_id}", name="agents-chat"),
            workflow_route(mastra),
            workflow_cancel_route(mastra),
        ]
    )


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(build(sys.argv[1]), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
