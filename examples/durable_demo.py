"""The demo agent on `agentstream worker` processes: chat answers run on the workers (streamed by any
server through Redis), and so does its background `research` tool. Run the commands below from the
root of the source checkout (``examples`` is found in the current directory, not installed).

    export AGENTSTREAM_DURABLE_DB=postgresql://postgres@127.0.0.1:54329/postgres
    export AGENTSTREAM_STREAM_STORE=redis://127.0.0.1:56379/0
    # one or more workers: chat turns (--app) and the research tool (TOOLS)
    agentstream worker examples.durable_demo:tools --app examples.durable_demo:mastra \
        --stream-store $AGENTSTREAM_STREAM_STORE
    # one or more servers: check each request, enqueue it, stream what a worker writes
    agentstream serve --app examples.durable_demo:mastra --durable-db $AGENTSTREAM_DURABLE_DB \
        --stream-store $AGENTSTREAM_STREAM_STORE

`agentstream cluster` starts PostgreSQL, Redis, two workers and two servers this way. The servers
load the same Mastra to check requests (unknown agent, malformed messages) before enqueueing.
The manager's ``remote`` setting sends every background task to the workers: no tool is wrapped.
With the shared stream store (``AGENTSTREAM_STREAM_STORE``), task streams (and until-idle chats)
follow tasks another process dispatched, and tasks of a process that died are taken over.
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
    url = os.environ.get("AGENTSTREAM_DURABLE_DB")
    if not url:
        raise RuntimeError(
            "examples.durable_demo needs the PostgreSQL URL: set AGENTSTREAM_DURABLE_DB=postgresql://… "
            "(agentstream worker --database-url sets it)"
        )
    agent = demo_agent("demo", default_options={"until_idle": {"max_idle_ms": 120_000}})
    background: dict[str, Any] = {"remote": DurableBackground(url)}
    shared = os.environ.get("AGENTSTREAM_STREAM_STORE")
    if shared and shared != "none":
        background["stream_store"] = stream_store_from_url(shared)
    store = PostgresStore(url, schema="agentstream_cluster")
    return Mastra(agents={"demo": agent}, storage=store, background_tasks=background)
