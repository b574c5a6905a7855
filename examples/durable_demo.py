"""The demo agent on `agentstream worker` processes: chat answers run on the workers (streamed by any
server through Redis), and so does its background `research` tool.

    export AGENTSTREAM_DURABLE_DB=postgresql://postgres@127.0.0.1:54329/postgres
    REDIS=redis://127.0.0.1:56379/0
    # one or more workers: chat turns (--app) and the research tool (TOOLS)
    agentstream worker examples.durable_demo:tools --app examples.durable_demo:mastra --stream-store $REDIS
    # one or more servers: check each request, enqueue it, stream what a worker writes
    agentstream serve --app examples.durable_demo:mastra --durable-db $AGENTSTREAM_DURABLE_DB --stream-store $REDIS

`scripts/cluster.sh` starts PostgreSQL, Redis, two workers and two servers this way. The servers
load the same Mastra to check requests (unknown agent, malformed messages) before enqueueing.
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
