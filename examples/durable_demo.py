"""The demo agent with its background `research` tool running on `agentstream worker` processes.

    AGENTSTREAM_DURABLE_DB=postgresql://postgres@127.0.0.1:54329/postgres
    agentstream worker examples.durable_demo:tools            # one or more workers
    agentstream serve --app examples.durable_demo:mastra      # one or more servers

`agentstream cluster` starts PostgreSQL, Redis, two workers and two servers this way.
"""

from __future__ import annotations

import os

from agentstream import Mastra
from agentstream._demo import demo_agent, research
from agentstream.background import BackgroundTaskManager
from agentstream.durable import DurableBackground
from agentstream.storage import PostgresStore

tools = {"research": research}


def mastra() -> Mastra:
    url = os.environ["AGENTSTREAM_DURABLE_DB"]
    remote = DurableBackground(url)
    agent = demo_agent("demo", default_options={"until_idle": {"max_idle_ms": 120_000}})
    agent.tools["research"] = remote.tool(agent.tools["research"])
    store = PostgresStore(url, schema="agentstream_cluster")
    manager = BackgroundTaskManager(store, {"enabled": True}, tools={"demo:research": agent.tools["research"]})
    return Mastra(agents={"demo": agent}, storage=store, background_tasks=manager)
