"""A server process for the connection-limit attacks: ``python -m tests.security._limits_server``.

Serves ``create_app`` (one agent answering ``ok``, bearer token ``t``) through `serving_config`
with the limits given as JSON in ``AGENTSTREAM_TEST_LIMITS`` (``"http"``: the protocol, ``"guard"``:
`RequestGuard` settings); prints its port, then serves.
"""

from __future__ import annotations

import json
import os
import socket
import sys

import uvicorn

from agentstream._app import create_app
from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.server import ConnectionLimits, RequestGuard, bearer_token_auth, serving_config
from tests.security._support import CountingModel


def main() -> None:
    settings = json.loads(os.environ.get("AGENTSTREAM_TEST_LIMITS", "{}"))
    guard_settings = settings.pop("guard", {})
    http = settings.pop("http", "auto")
    mastra = Mastra(agents={"echo": Agent(id="echo", instructions="Be brief.", model=CountingModel())})
    guard = RequestGuard(auth=bearer_token_auth("t"), **guard_settings)
    app = create_app(mastra, smooth=False, heartbeat_ms=0, guard=guard)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)  # before the port is printed: the attack may start at once
    sock.set_inheritable(True)
    print(sock.getsockname()[1], flush=True)
    config = serving_config(app, ConnectionLimits(**settings), http=http, log_level="critical", backlog=4096)
    with sock:
        uvicorn.Server(config).run(sockets=[sock])
    sys.exit(0)


if __name__ == "__main__":
    main()
