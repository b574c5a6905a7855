"""The demo served as ``agentstream serve`` serves it, with a shorter idle window:
``python -m tests.background._idle_load_app <port> <max idle ms>``.

The demo agent and ``Mastra`` (background tasks on, the default concurrency: 5 per agent), every
chat an until-idle stream, the app's chat route with smoothing (word chunks, 10 ms), over uvicorn
with ``serving_config`` (the connection limits). `test_until_idle_sustained_load` drives it.
"""

from __future__ import annotations

import sys


def main(port: int, window_ms: int) -> None:
    import uvicorn

    from agentstream._app import create_app
    from agentstream._demo import demo_mastra
    from agentstream.server import serving_config

    mastra = demo_mastra(until_idle={"max_idle_ms": window_ms})
    app = create_app(mastra)
    uvicorn.Server(serving_config(app, host="127.0.0.1", port=port, log_level="warning")).run()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
