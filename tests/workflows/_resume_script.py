"""One process of the cross-process resume test: ``start`` runs the approval workflow until it suspends,
``resume`` (a new process) resumes it from the shared store. Prints the result as one JSON line."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agentstream import Mastra
from agentstream.workflows import StepContext, create_step, create_workflow
from tests.background._worker_script import open_store


async def approve(c: StepContext) -> Any:
    if c.resume_data is None:
        c.writer.write({"phase": "asking"})
        return await c.suspend({"question": f"publish {c.input_data['title']}?"})
    return {"title": c.input_data["title"], "approved": c.resume_data["approved"]}


def publish(c: StepContext) -> Any:
    return {"published": c.input_data["approved"], "title": c.input_data["title"]}


WORKFLOW = (
    create_workflow(id="publishing")
    .then(
        create_step(id="approve", execute=approve, resume_schema={"type": "object", "required": ["approved"]})
    )
    .then(create_step(id="publish", execute=publish))
    .commit()
)


async def main(target: str, phase: str, run_id: str) -> None:
    async with Mastra(workflows={"publishing": WORKFLOW}, storage=open_store(target)) as mastra:
        run = await mastra.get_workflow("publishing").create_run(run_id)
        if phase == "start":
            output = run.stream(input_data={"title": "tides"})
        else:
            output = run.resume_stream(step="approve", resume_data={"approved": True})
        chunks = [c.type async for c in output.full_stream]
        result = await output.result
        print(json.dumps({"chunks": chunks, "result": result.to_dict()}))
        await mastra.storage.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
