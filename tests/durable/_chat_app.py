"""The Mastra of the chat-turn tests, loaded by the server (`agentstream serve --app`) and by the
workers (`agentstream worker --app`): the demo agent, and ``gated``, whose answer stops halfway
until the file named by ``AGENTSTREAM_TEST_GATE`` exists (the test decides, without timing)."""

from __future__ import annotations

from agentstream._demo import demo_agent
from agentstream._mastra import Mastra
from agentstream.agent import Agent
from tests.resumable._gated_app import FileGatedModel


def mastra() -> Mastra:
    gated = Agent(id="gated", instructions="Be brief.", model=FileGatedModel())
    return Mastra(agents={"demo": demo_agent(), "gated": gated})
