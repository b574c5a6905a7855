"""What the workflow tests share: a numeric schema, an adding step, a run's chunks, a workflow that
asks for approval."""

from __future__ import annotations

from typing import Any

from agentstream.workflows import StepContext, Workflow, create_step, create_workflow

NUMBER = {"type": "object", "properties": {"value": {"type": "number"}}, "required": ["value"]}


def add(n: int, id: str | None = None) -> Any:
    return create_step(id=id or f"add-{n}", execute=lambda c: {"value": c.input_data["value"] + n})


async def chunks_of(output: Any) -> list[Any]:
    return [c async for c in output.full_stream]


def approval_workflow() -> Workflow:
    async def approve(c: StepContext) -> Any:
        if c.resume_data is None:
            return await c.suspend({"question": "ok?"})
        return {"approved": c.resume_data["approved"], "asked": c.suspend_data}

    return (
        create_workflow(id="approval")
        .then(
            create_step(
                id="approve",
                resume_schema={
                    "type": "object",
                    "properties": {"approved": {"type": "boolean"}},
                    "required": ["approved"],
                },
                suspend_schema={"type": "object", "properties": {"question": {"type": "string"}}},
                execute=approve,
            )
        )
        .commit()
    )
