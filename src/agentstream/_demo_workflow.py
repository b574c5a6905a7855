"""The demo workflow (application layer): ``publish-article`` = gather notes → draft (an agent step on the
demo model) → approve (suspends for a human) → publish. Offline on the ``demo`` model."""

from __future__ import annotations

import asyncio
from typing import Any

from ._abort import until_aborted
from .agent import Agent
from .models import LanguageModel
from .workflows import StepContext, Workflow, create_step, create_workflow

__all__ = ["demo_workflow"]

TOPIC = {
    "type": "object",
    "properties": {"topic": {"type": "string", "minLength": 1}},
    "required": ["topic"],
    "additionalProperties": False,
}
NOTES = {
    "type": "object",
    "properties": {"topic": {"type": "string"}, "notes": {"type": "array", "items": {"type": "string"}}},
    "required": ["topic", "notes"],
}
DECISION = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["approved"],
    "additionalProperties": False,
}
PUBLISHED = {
    "type": "object",
    "properties": {
        "published": {"type": "boolean"},
        "topic": {"type": "string"},
        "words": {"type": "number"},
    },
    "required": ["published", "topic"],
}


async def _gather(context: StepContext) -> dict[str, Any]:
    topic = context.input_data["topic"]
    notes = []
    for source in ("encyclopedia", "field notes", "recent articles"):
        context.writer.write({"status": "reading", "source": source})
        await until_aborted(asyncio.sleep(0.2), context.abort_signal)
        notes.append(f"{source}: what matters most about {topic}")
    return {"topic": topic, "notes": notes}


def _brief(context: StepContext) -> dict[str, str]:
    notes = "; ".join(context.input_data["notes"])
    return {"prompt": f"Explain {context.input_data['topic']} for a short article. Notes: {notes}"}


async def _approve(context: StepContext) -> Any:
    draft = context.get_step_result("writer")["text"]
    if context.resume_data is None:
        return await context.suspend({"question": "Publish this draft?", "words": len(draft.split())})
    return {
        "approved": context.resume_data["approved"],
        "note": context.resume_data.get("note", ""),
        "text": draft,
    }


def _publish(context: StepContext) -> dict[str, Any]:
    topic = context.get_init_data()["topic"]
    if not context.input_data["approved"]:
        return {"published": False, "topic": topic, "reason": context.input_data["note"] or "not approved"}
    return {"published": True, "topic": topic, "words": len(context.input_data["text"].split())}


def demo_workflow(model: LanguageModel | str = "demo") -> Workflow:
    """The ``publish-article`` workflow: input ``{"topic": ...}``; suspends at ``approve`` until resumed
    with ``{"approved": true|false, "note"?: ...}``."""
    writer = Agent(id="writer", name="Writer", instructions="You write short, clear articles.", model=model)
    return (
        create_workflow(
            id="publish-article",
            description="Gather notes on a topic, draft an article with an agent, wait for approval, publish.",
            input_schema=TOPIC,
            output_schema=PUBLISHED,
        )
        .then(create_step(id="gather", input_schema=TOPIC, output_schema=NOTES, execute=_gather))
        .map(_brief, id="brief")
        .then(create_step(writer))
        .then(
            create_step(
                id="approve",
                description="A person approves the draft",
                suspend_schema={"type": "object", "properties": {"question": {"type": "string"}}},
                resume_schema=DECISION,
                execute=_approve,
            )
        )
        .then(create_step(id="publish", output_schema=PUBLISHED, execute=_publish))
        .commit()
    )
