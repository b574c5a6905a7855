"""``workflow_run_span`` / ``workflow_step_span``: what a workflow engine wraps its run and steps in."""

from __future__ import annotations

import pytest
from opentelemetry.trace import StatusCode

from agentstream import AbortError, Agent, instrument
from agentstream.testing import ScriptedModel
from agentstream.tracing import workflow_run_span, workflow_step_span

from .conftest import Spans
from .test_run_spans import text_step


async def test_steps_nest_under_the_run_and_agent_runs_under_their_step(spans: Spans) -> None:
    instrument(spans.provider)
    writer = Agent(id="writer", model=ScriptedModel([text_step("A draft.")]))
    with workflow_run_span("publish", run_id="wf-run-1") as run:
        assert run is not None
        with workflow_step_span("draft", workflow_id="publish", run_id="wf-run-1"):
            output = writer.stream("write")  # created in the step: its span nests there
        with workflow_step_span("review", workflow_id="publish", run_id="wf-run-1", attributes={"retry": 0}):
            pass
    await output.text
    assert spans.tree() == (
        "workflow_run publish",
        [
            ("workflow_step draft", [("invoke_agent writer", [("chat mock-model-id", [])])]),
            ("workflow_step review", []),
        ],
    )
    assert dict(spans.named("workflow_step review").attributes or {}) == {
        "agentstream.workflow.id": "publish",
        "agentstream.workflow.run_id": "wf-run-1",
        "agentstream.workflow.step.id": "review",
        "retry": 0,
    }


def test_a_failing_step_is_an_error_span(spans: Spans) -> None:
    instrument(spans.provider)
    with pytest.raises(ValueError, match="bad input"), workflow_step_span("parse", workflow_id="wf"):
        raise ValueError("bad input")
    step = spans.named("workflow_step parse")
    assert step.status.status_code is StatusCode.ERROR and step.status.description == "bad input"
    assert (step.attributes or {})["error.type"] == "ValueError"


def test_control_flow_and_aborts_are_not_errors(spans: Spans) -> None:
    class Suspend(Exception):
        pass

    instrument(spans.provider)
    with pytest.raises(Suspend), workflow_step_span("ask", workflow_id="wf", control_flow=(Suspend,)):
        raise Suspend()
    with pytest.raises(AbortError), workflow_step_span("slow", workflow_id="wf"):
        raise AbortError("stop")
    ask, slow = spans.named("workflow_step ask"), spans.named("workflow_step slow")
    assert (ask.attributes or {})["agentstream.workflow.ended_by"] == "Suspend"
    assert (slow.attributes or {})["agentstream.aborted"] is True
    assert ask.status.status_code is slow.status.status_code is StatusCode.UNSET


def test_off_the_helpers_make_nothing(spans: Spans) -> None:
    with workflow_run_span("wf") as run, workflow_step_span("s", workflow_id="wf") as step:
        assert run is None and step is None
    assert spans.finished == []


async def test_a_workflow_run_is_traced_step_by_step_with_its_agent_step_nested(spans: Spans) -> None:
    from agentstream.workflows import create_step, create_workflow

    instrument(spans.provider)

    async def gather(context: object) -> dict[str, str]:
        return {"prompt": "write about the notes"}

    async def failing(context: object) -> str:
        raise RuntimeError("publishing failed")

    writer = Agent(id="writer", model=ScriptedModel([text_step("A draft.")]))
    workflow = (
        create_workflow(id="publish", input_schema={"type": "string"}, output_schema={"type": "object"})
        .then(create_step(id="gather", execute=gather))
        .then(create_step(writer))
        .then(create_step(id="publish-it", execute=failing))
        .commit()
    )
    run = await workflow.create_run(run_id="wf-run-2")
    output = run.stream(input_data="topic")
    async for _ in output.full_stream:
        pass
    assert output.status == "failed"
    assert spans.tree() == (
        "workflow_run publish",
        [
            ("workflow_step gather", []),
            ("workflow_step writer", [("invoke_agent writer", [("chat mock-model-id", [])])]),
            ("workflow_step publish-it", []),
        ],
    )
    assert spans.named("workflow_step publish-it").status.status_code is StatusCode.ERROR
    assert spans.named("workflow_step gather").status.status_code is StatusCode.UNSET
