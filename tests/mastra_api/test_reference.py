"""Our answers against the real Mastra server's, recorded by ``record_reference.py`` into
tests/data/mastra-api/reference.json (the demo app in Mastra, ``reference-server.mjs``): the same
discovery bodies, the same keys for an agent, a tool, a streamed chunk and a thread signal, the
same order of chunk types (the demo model also streams its reasoning, which the reference's
scripted model does not), the same 404. Where ours differ on purpose, the test names it."""

from __future__ import annotations

import json
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest

from tests.mastra_api.conftest import ApiServer
from tests.mastra_api.record_reference import DISCOVERY, record

REFERENCE = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "mastra-api" / "reference.json").read_text()
)
# Mastra's generate() also returns `messages` (the run's model messages) and `rememberedMessages`
# (what memory recalled): internal message formats no client-js method or Studio page reads.
NOT_IN_OUR_GENERATE = {"messages", "rememberedMessages"}
# We keep no metrics or logs: no such capabilities to announce. The reference server configures no
# observability (`observabilityEnabled: false`); our demo app records its traces while it serves.
PACKAGES_VALUES_OURS = {
    "storageType",
    "observabilityStorageType",
    "observabilityStorageCapabilities",
    "observabilityEnabled",
}


def _shape(types: list[str]) -> list[str]:
    """Chunk types without reasoning and with runs of one type collapsed (deltas vary in number)."""
    return [t for t, _ in groupby(t for t in types if not t.startswith("reasoning-"))]


@pytest.fixture(scope="module")
def ours(demo_api: ApiServer) -> dict[str, Any]:
    return record(demo_api.base_url)


def test_discovery_answers_are_mastra_s(ours: dict[str, Any]) -> None:
    for path in DISCOVERY:
        theirs, mine = REFERENCE["discovery"][path], ours["discovery"][path]
        if path == "/api/system/packages":
            assert sorted(mine) == sorted(theirs)
            assert {k: v for k, v in mine.items() if k not in PACKAGES_VALUES_OURS} == {
                k: v for k, v in theirs.items() if k not in PACKAGES_VALUES_OURS
            }
        else:
            assert mine == theirs, path


def test_agent_and_tool_records_have_mastra_s_keys(ours: dict[str, Any]) -> None:
    assert ours["agentListKeys"] == REFERENCE["agentListKeys"]
    assert ours["agentKeys"] == REFERENCE["agentKeys"]
    # the reference's weather tool declares an output schema (zod); the demo's `@tool` returns a
    # plain dict, so ours has none to send (a tool with `output_schema` sends it)
    assert set(ours["toolKeys"]) | {"outputSchema"} == set(REFERENCE["toolKeys"])
    theirs, mine = REFERENCE["toolInputSchema"]["json"], ours["toolInputSchema"]["json"]
    assert mine["required"] == theirs["required"] and mine["properties"]["city"]["type"] == "string"
    assert ours["notFound"] == REFERENCE["notFound"]


def test_a_streamed_answer_has_mastra_s_chunks_in_mastra_s_order(ours: dict[str, Any]) -> None:
    assert ours["streamChunkKeys"] == REFERENCE["streamChunkKeys"]
    assert _shape(ours["streamTypes"]) == _shape(REFERENCE["streamTypes"])
    assert set(REFERENCE["generateKeys"]) - set(ours["generateKeys"]) == NOT_IN_OUR_GENERATE


def test_a_thread_message_reaches_the_subscriber_as_in_mastra(ours: dict[str, Any]) -> None:
    assert ours["sendMessageKeys"] == REFERENCE["sendMessageKeys"]
    assert ours["signalKeys"] == REFERENCE["signalKeys"]
    assert _shape(ours["subscribedTypes"]) == _shape(REFERENCE["subscribedTypes"])
