"""The demo agent with its background `research` tool running on `agentstream worker` processes.

    AGENTSTREAM_DURABLE_DB=postgresql://postgres@127.0.0.1:54329/postgres
    AGENTSTREAM_STREAM_STORE=redis://127.0.0.1:56379/0       # optional: follow tasks from any server
    agentstream worker examples.durable_demo:tools            # one or more workers
    agentstream serve --app examples.durable_demo:mastra      # one or more servers

The manager's ``remote`` setting sends every background task to the workers: no tool is wrapped.
With a shared stream store, each server's task stream (and until-idle chats) also follows tasks
another server dispatched, and a server that dies has its tasks taken over by another one.
`scripts/cluster.sh` starts PostgreSQL, Redis, two workers and two servers this way.
"""

from __future__ import annotations

import os
from typing import Any

from agentstream import Mastra
from agentstream._demo import demo_agent, research
from agentstream.durable import DurableBackground
from agentstream.resumable import stream_store_from_url
from agentstream.storage import PostgresStore

tools = {"research": research}


def mastra() -> Mastra:
    url = os.environ["AGENTSTREAM_DURABLE_DB"]
    agent = demo_agent("demo", default_options={"until_idle": {"max_idle_ms": 120_000}})
    background: dict[str, Any] = {"remote": DurableBackground(url)}
    shared = os.environ.get("AGENTSTREAM_STREAM_STORE")
    if shared and shared != "none":
        background["stream_store"] = stream_store_from_url(shared)
    store = PostgresStore(url, schema="agentstream_cluster")
    return Mastra(agents={"demo": agent}, storage=store, background_tasks=background)
