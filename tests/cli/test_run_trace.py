"""``agentstream run --trace``: the run's span tree on stderr (a real subprocess, the demo model)."""

from __future__ import annotations

import re

from tests.cli._support import agentstream, assert_one_line, clean_env

DURATION = r"\d+(\.\d+)? (s|ms|µs)"


def test_trace_prints_the_span_tree_of_a_tool_using_run() -> None:
    proc = agentstream("run", "--trace", "--smooth", "none", "What is the weather in Oslo?")
    assert proc.returncode == 0, proc.stderr
    assert "weather" in proc.stdout and "[trace]" not in proc.stdout  # the tree goes to stderr only
    tree = proc.stderr.split("[trace]\n", 1)[1].splitlines()
    patterns = [
        rf"invoke_agent Demo Agent  {DURATION}  model=demo  tokens in=\d+ out=\d+  finish=stop",
        rf"├─ chat demo  {DURATION}  tokens in=\d+ out=\d+  finish=tool-calls",
        rf"├─ execute_tool weather  {DURATION}  call=call_\w+",
        rf"└─ chat demo  {DURATION}  tokens in=\d+ out=\d+  finish=stop",
    ]
    assert len(tree) == len(patterns), tree
    for line, pattern in zip(tree, patterns, strict=True):
        assert re.fullmatch(pattern, line), (pattern, line)


def test_trace_shows_a_failed_model_call() -> None:
    env = clean_env(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    proc = agentstream("run", "--trace", "--model", "openai/gpt-4o-mini", "hi", env=env)
    assert proc.returncode == 1
    tree = proc.stderr.split("[trace]\n", 1)[1].splitlines()
    assert re.fullmatch(
        rf"invoke_agent Demo Agent  {DURATION}  model=gpt-4o-mini  .*ERROR openai: cannot connect.*", tree[0]
    ), tree[0]
    assert re.fullmatch(rf"└─ chat gpt-4o-mini  {DURATION}  ERROR openai: cannot connect.*", tree[1]), tree[1]
    assert tree[2].startswith("agentstream run: the run failed: openai: cannot connect")


def test_trace_without_the_sdk_is_one_line() -> None:
    proc = agentstream(
        "run",
        "--trace",
        "hi",
        prelude="import sys; sys.modules['opentelemetry.sdk'] = None",
        env=clean_env(AGENTSTREAM_MODEL="demo"),
    )
    assert_one_line(proc, "run", 1, "--trace needs the OpenTelemetry SDK", "pip install")
