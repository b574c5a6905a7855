"""Workflow run listings and tracing spans, on every backend (what the Mastra API's runs and
traces routes read)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentstream.storage import BaseStore, SpanRecord, TraceQuery, WorkflowRunQuery

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def test_runs_are_listed_newest_first_filtered_and_paged(store: BaseStore) -> None:
    for i, (status, owner) in enumerate([("success", "u1"), ("suspended", "u2"), ("success", "u1")]):
        await store.persist_workflow_snapshot("wf", f"r{i}", {"status": status}, resource_id=owner)
    await store.persist_workflow_snapshot("other", "x", {"status": "success"})
    await store.persist_workflow_snapshot("wf#resume-tokens", "r1#1", {"runId": "r1"})
    runs, total = await store.list_workflow_runs(WorkflowRunQuery(workflow_name="wf"))
    assert total == 3 and [r.run_id for r in runs] == ["r2", "r1", "r0"]
    mine, n = await store.list_workflow_runs(WorkflowRunQuery(workflow_name="wf", resource_id="u1"))
    assert n == 2 and {r.run_id for r in mine} == {"r0", "r2"}
    suspended, n = await store.list_workflow_runs(WorkflowRunQuery(workflow_name="wf", status="suspended"))
    assert n == 1 and suspended[0].run_id == "r1" and suspended[0].resource_id == "u2"
    page, n = await store.list_workflow_runs(WorkflowRunQuery(workflow_name="wf", page=1, per_page=2))
    assert n == 3 and [r.run_id for r in page] == ["r0"]
    later, n = await store.list_workflow_runs(
        WorkflowRunQuery(workflow_name="wf", from_date=datetime.now(UTC) + timedelta(hours=1))
    )
    assert (later, n) == ([], 0)
    found = await store.find_workflow_run("wf", "r1")
    assert (
        found is not None
        and found.snapshot == {"status": "suspended"}
        and found.created_at <= found.updated_at
    )
    assert await store.find_workflow_run("wf", "nope") is None


async def test_run_listing_checks_its_arguments(store: BaseStore) -> None:
    with pytest.raises(ValueError, match="per_page"):
        await store.list_workflow_runs(WorkflowRunQuery(workflow_name="wf", per_page=0))
    with pytest.raises(ValueError, match="from_date"):
        await store.list_workflow_runs(WorkflowRunQuery(workflow_name="wf", from_date=datetime(2026, 1, 1)))


def _span(trace: str, span: str, parent: str | None, at: int, **kw: object) -> SpanRecord:
    return SpanRecord(
        trace_id=trace,
        span_id=span,
        parent_span_id=parent,
        name=f"span {span}",
        span_type=str(kw.pop("span_type", "agent_run")),
        started_at=T0 + timedelta(seconds=at),
        ended_at=kw.pop("ended_at", T0 + timedelta(seconds=at + 1)),  # type: ignore[arg-type]
        data={"attributes": {"k": at}, "input": [{"role": "user", "content": "hi"}]},
        **kw,  # type: ignore[arg-type]
    )


async def test_traces_are_root_spans_filtered_and_paged(store: BaseStore) -> None:
    await store.save_spans(
        [
            _span("t1", "a", None, 0, resource_id="u1", entity_type="agent", entity_id="demo"),
            _span("t1", "b", "a", 1, span_type="tool_call"),
            _span("t2", "c", None, 5, resource_id="u2", error={"message": "boom"}, span_type="workflow_run"),
            _span("t3", "d", None, 9, resource_id="u1", ended_at=None),
        ]
    )
    roots, total = await store.list_traces(TraceQuery())
    assert total == 3 and [r.trace_id for r in roots] == ["t3", "t2", "t1"]
    mine, n = await store.list_traces(TraceQuery(resource_id="u1", descending=False))
    assert n == 2 and [r.trace_id for r in mine] == ["t1", "t3"]
    for status, expected in (("error", ["t2"]), ("running", ["t3"]), ("success", ["t1"])):
        found, _ = await store.list_traces(TraceQuery(status=status))
        assert [r.trace_id for r in found] == expected, status
    by_entity, _ = await store.list_traces(TraceQuery(entity_type="agent", entity_id="demo"))
    assert [r.span_id for r in by_entity] == ["a"]
    paged, n = await store.list_traces(TraceQuery(page=1, per_page=2))
    assert n == 3 and [r.trace_id for r in paged] == ["t1"]
    window, _ = await store.list_traces(
        TraceQuery(started_from=T0 + timedelta(seconds=4), started_to=T0 + timedelta(seconds=6))
    )
    assert [r.trace_id for r in window] == ["t2"]
    spans = await store.get_trace("t1")
    assert [s.span_id for s in spans] == ["a", "b"] and spans[1].parent_span_id == "a"
    assert spans[0].data == {"attributes": {"k": 0}, "input": [{"role": "user", "content": "hi"}]}
    assert (await store.get_trace("t2"))[0].error == {"message": "boom"}
    assert await store.get_trace("nope") == []


async def test_a_span_saved_again_replaces_it_and_clear_all_removes_spans(store: BaseStore) -> None:
    await store.save_spans([_span("t1", "a", None, 0, ended_at=None)])
    await store.save_spans([_span("t1", "a", None, 0)])
    spans = await store.get_trace("t1")
    assert len(spans) == 1 and spans[0].ended_at is not None
    await store.dangerously_clear_all()
    assert await store.get_trace("t1") == []
