"""``serve --trace``'s span processor: one tree per finished local root, bounded memory."""

from __future__ import annotations

import io

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from agentstream._cli._trace_printer import TreePrinter


def printer() -> tuple[TreePrinter, io.StringIO, trace.Tracer]:
    out = io.StringIO()
    tree = TreePrinter(out)
    provider = TracerProvider()
    provider.add_span_processor(tree)
    return tree, out, provider.get_tracer("test")


def trees(out: io.StringIO) -> list[list[str]]:
    """Each ``[trace]`` block's span names, indentation kept, durations dropped."""
    blocks = out.getvalue().split("[trace]\n")[1:]
    return [[line.split("  ")[0] for line in block.splitlines()] for block in blocks]


def test_interleaved_roots_print_apart_each_when_it_ends() -> None:
    _, out, tracer = printer()
    first = tracer.start_span("invoke_agent A")
    second = tracer.start_span("invoke_agent B")
    a_chat = tracer.start_span("chat a", context=trace.set_span_in_context(first))
    b_chat = tracer.start_span("chat b", context=trace.set_span_in_context(second))
    b_chat.end()
    a_chat.end()
    assert out.getvalue() == ""  # nothing until a root ends
    second.end()
    assert trees(out) == [["invoke_agent B", "└─ chat b"]]
    first.end()
    assert trees(out) == [["invoke_agent B", "└─ chat b"], ["invoke_agent A", "└─ chat a"]]


def test_a_remote_parent_makes_a_local_root_and_requests_of_one_trace_print_apart() -> None:
    _, out, tracer = printer()
    caller = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    context = trace.set_span_in_context(NonRecordingSpan(caller))
    one = tracer.start_span("invoke_agent one", context=context)
    two = tracer.start_span("invoke_agent two", context=context)
    tool = tracer.start_span("execute_tool t", context=trace.set_span_in_context(two))
    one.end()
    tool.end()
    two.end()
    assert trees(out) == [["invoke_agent one"], ["invoke_agent two", "└─ execute_tool t"]]


def test_a_span_outliving_its_written_tree_is_written_alone() -> None:
    _, out, tracer = printer()
    run = tracer.start_span("invoke_agent A")
    tool = tracer.start_span("execute_tool t", context=trace.set_span_in_context(run))
    task = tracer.start_span("background_task t", context=trace.set_span_in_context(tool))
    tool.end()
    run.end()
    task.end()
    assert trees(out) == [["invoke_agent A", "└─ execute_tool t"], ["background_task t"]]


def test_unfinished_trees_are_written_at_shutdown_and_memory_is_bounded() -> None:
    tree, out, tracer = printer()
    tree.MAX_SPANS = 3
    roots = [tracer.start_span(f"root {i}") for i in range(2)]
    for i, root in enumerate(roots):
        for j in range(2):
            tracer.start_span(f"child {i}.{j}", context=trace.set_span_in_context(root)).end()
    # the fourth waiting span pushed the oldest tree out, unfinished
    assert trees(out) == [["child 0.0", "child 0.1"]]
    assert tree.count == 2
    tree.shutdown()
    assert trees(out)[1] == ["child 1.0", "child 1.1"] and tree.waiting == {}
