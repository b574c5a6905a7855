"""Pure config decisions, checked against the recorded Mastra run where it shows them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentstream.background import (
    AgentBackgroundConfig,
    BackgroundTaskManagerConfig,
    CleanupConfig,
    append_to_system_prompt,
    background_system_prompt,
    continuation_directive,
    inject_background_schema,
    is_background_eligible,
    resolve_background_config,
    resumed_result_text,
)
from agentstream.background._config import placeholder_result_text

CASE = (
    Path(__file__).resolve().parents[1] / "data" / "conformance" / "agent" / "background-task-until-idle.json"
)


@pytest.fixture(scope="module")
def case() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CASE.read_text())
    return data


def test_manager_defaults() -> None:
    c = BackgroundTaskManagerConfig()
    assert (c.enabled, c.global_concurrency, c.per_agent_concurrency, c.backpressure) == (
        False,
        10,
        5,
        "queue",
    )
    assert (c.default_timeout_ms, c.default_retries.max_retries, c.recover_stale_tasks_on_start) == (
        300_000,
        0,
        True,
    )
    # retention is on by default: finished records go after 1 h (completed) / 24 h (failed etc.)
    assert c.cleanup == c.cleanup_ttls == CleanupConfig(3_600_000, 86_400_000, 60_000)
    assert (c.lease_ms, c.heartbeat_interval_ms, c.heartbeat_ms, c.max_queued) == (30_000, None, 10_000, 1000)
    assert c.progress_throttle_ms is None and c.shutdown_grace_ms == 5000
    d = BackgroundTaskManagerConfig.from_value(
        {"global_concurrency": 3, "default_retries": {"max_retries": 2}, "cleanup": {}}
    )
    assert d.enabled and d.global_concurrency == 3 and d.default_retries.max_retries == 2
    assert d.cleanup == CleanupConfig()
    assert not BackgroundTaskManagerConfig.from_value({"enabled": False}).enabled
    with pytest.raises(ValueError, match="global_concurrency"):
        BackgroundTaskManagerConfig(global_concurrency=0)
    with pytest.raises(ValueError, match="mode"):
        BackgroundTaskManagerConfig(mode="worker")


def test_retention_lease_and_queue_settings() -> None:
    off = BackgroundTaskManagerConfig.from_value({"cleanup": False})
    assert off.cleanup is None and off.cleanup_ttls == CleanupConfig()
    assert BackgroundTaskManagerConfig.from_value({"cleanup": None}).cleanup is None
    short = BackgroundTaskManagerConfig.from_value(
        {
            "cleanup": {"completed_ttl_ms": 60_000},
            "lease_ms": 900,
            "heartbeat_interval_ms": 100,
            "max_queued": 5,
        }
    )
    assert short.cleanup == CleanupConfig(completed_ttl_ms=60_000)
    assert (short.lease_ms, short.heartbeat_ms, short.max_queued) == (900, 100, 5)
    assert BackgroundTaskManagerConfig(lease_ms=2).heartbeat_ms == 1
    assert BackgroundTaskManagerConfig(max_queued=None).max_queued is None
    with pytest.raises(
        ValueError, match=r"heartbeat_interval_ms \(1000\) must be shorter than lease_ms \(1000\)"
    ):
        BackgroundTaskManagerConfig(lease_ms=1000, heartbeat_interval_ms=1000)
    with pytest.raises(ValueError, match="lease_ms must be an int >= 1, got 0"):
        BackgroundTaskManagerConfig(lease_ms=0)
    with pytest.raises(ValueError, match="max_queued must be an int >= 0, got -1"):
        BackgroundTaskManagerConfig(max_queued=-1)
    with pytest.raises(ValueError, match="cleanup must be a CleanupConfig, a dict or None, got 'daily'"):
        BackgroundTaskManagerConfig(cleanup="daily")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"cleanup: unknown key\(s\) 'retention'"):
        BackgroundTaskManagerConfig.from_value({"cleanup": {"retention": 5}})


def test_resolution_order() -> None:
    r = resolve_background_config(args={"topic": "q"}, tool_name="research", tool_config={"enabled": True})
    assert (r.run_in_background, r.disposition, r.timeout_ms, r.max_retries) == (True, "deferred", 300_000, 0)
    assert r.args == {"topic": "q"}
    # not eligible: always foreground, override ignored
    r = resolve_background_config(args={"_background": {"disposition": "deferred"}}, tool_name="x")
    assert not r.run_in_background and r.args == {} and not r.eligible
    # override wins and is stripped; the input mapping is not mutated
    args = {"topic": "q", "_background": {"disposition": "awaited", "timeoutMs": 10, "maxRetries": 3}}
    r = resolve_background_config(
        args=args,
        tool_name="research",
        tool_config={"enabled": True, "timeout_ms": 99, "max_retries": 1},
        manager_config={"default_timeout_ms": 5},
    )
    assert (r.disposition, r.timeout_ms, r.max_retries, r.args) == ("awaited", 10, 3, {"topic": "q"})
    assert "_background" in args
    r = resolve_background_config(
        args={"_background": {"enabled": False}}, tool_name="research", tool_config={"enabled": True}
    )
    assert r.disposition == "foreground"
    r = resolve_background_config(
        args={"_background": {"enabled": True}},
        tool_name="r",
        tool_config={"enabled": True, "default_disposition": "foreground"},
    )
    assert r.disposition == "deferred"
    r = resolve_background_config(
        args={}, tool_name="r", tool_config={"enabled": True, "default_disposition": "foreground"}
    )
    assert r.disposition == "foreground" and r.eligible
    # timeout chain: agent tool > tool > manager
    r = resolve_background_config(
        args={},
        tool_name="agent-r",
        tool_config={"enabled": False, "timeout_ms": 7},
        agent_config={"tools": {"r": {"enabled": True, "timeout_ms": 3}}},
        manager_config={"default_timeout_ms": 5},
    )
    assert r.run_in_background and r.timeout_ms == 3
    r = resolve_background_config(
        args={},
        tool_name="r",
        tool_config={"enabled": True},
        manager_config={"default_timeout_ms": 5, "default_retries": {"max_retries": 4}},
    )
    assert (r.timeout_ms, r.max_retries) == (5, 4)


def test_eligibility() -> None:
    assert is_background_eligible("t", None, {"tools": "all"})
    assert not is_background_eligible("t", {"enabled": True}, {"disabled": True, "tools": "all"})
    assert not is_background_eligible("t", {"enabled": True}, {"tools": {"t": False}})
    assert is_background_eligible("t", {"enabled": True}, {"tools": {"other": True}})
    assert is_background_eligible("workflow-t", None, AgentBackgroundConfig(tools={"t": True}))
    assert not is_background_eligible("t", {"enabled": False})


def test_schema_injection_matches_recording(case: dict[str, Any]) -> None:
    sent = case["modelCalls"][0]["otherOptions"]["tools"][0]["inputSchema"]
    declared = case["agent"]["tools"][0]["inputSchema"]
    injected = inject_background_schema(declared)
    assert injected == sent
    assert json.dumps(injected) == json.dumps(sent)  # key order too
    assert "_background" not in declared["properties"]


def test_system_prompt_matches_recording(case: dict[str, Any]) -> None:
    recorded = case["modelCalls"][0]["prompt"][0]["content"]
    section = background_system_prompt({"research": {"enabled": True}, "plain": None})
    assert section is not None
    prompt = [{"role": "system", "content": case["agent"]["instructions"]}, {"role": "user", "content": []}]
    append_to_system_prompt(prompt, section)
    assert prompt[0]["content"] == recorded
    assert background_system_prompt({"plain": None}) is None
    fg = background_system_prompt({"r": {"enabled": True, "default_disposition": "foreground"}})
    assert fg is not None and '- r (default: foreground \u2014 opt in with "_background")' in fg


def test_directive_and_placeholders_match_recording(case: dict[str, Any]) -> None:
    directive = case["modelCalls"][2]["prompt"][1]
    assert directive["role"] == "system"
    assert continuation_directive([("completed", "call-1", "research", "<id:2>")]) == directive["content"]
    placeholder = case["expectedChunks"][8]["payload"]["result"]
    assert placeholder_result_text("<id:2>", "research") == placeholder
    assert resumed_result_text("t", "x").startswith("Background task resumed. Task ID: t.")
    mixed = continuation_directive(
        [
            ("failed", "c1", "a", "t1"),
            ("suspended", "c2", "b", "t2"),
            ("cancelled", "c3", "c", "t3"),
            ("completed", "c4", "d", "t4"),
        ]
    )
    order = [
        mixed.index(s)
        for s in ("completed successfully: c4", "failed: c1", "were cancelled", "are suspended: c2")
    ]
    assert order == sorted(order)
    assert "Do not retry these tools unless the user explicitly requests it." in mixed
