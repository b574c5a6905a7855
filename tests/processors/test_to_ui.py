"""A processed agent run converted for ``useChat``: the agent streams of the processor recordings,
made by our loop, convert to the UI chunks Mastra's ``toAISdkStream`` produced from the real ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentstream.ai_sdk import to_ai_sdk_stream
from tests.agent.test_conformance import _matches, _run
from tests.ai_sdk.test_conformance import _as_we_send  # the one deliberate divergence
from tests.conformance import CONFORMANCE, load, to_wire, vector_files

CASES = [
    p
    for p in vector_files("aisdk")
    if "processor" in p.stem and "agent/" in str(load(p).get("inputFrom", ""))
]


def test_every_processor_ui_recording_is_covered() -> None:
    assert {p.stem for p in CASES} == {
        "processor-retry-step-v5",
        "processor-step-tripwire-v5",
        "processor-tripwire-second-step-v5",
    }


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
async def test_agent_stream_converts_as_recorded(path: Path) -> None:
    ui = load(path)
    agent_name = str(ui["inputFrom"]).split("agent/")[1].split(".json")[0]
    output, *_ = await _run(load(CONFORMANCE / "agent" / f"{agent_name}.json"))
    options: dict[str, Any] = {"version": ui["options"].get("version", "v5")}
    parts = [p async for p in to_ai_sdk_stream(output, **options)]
    _matches(to_wire(_as_we_send(ui)["expected"]), parts, "ui")
