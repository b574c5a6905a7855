"""The app `bench/bench_serve.py` serves with ``agentstream serve --app _serve_app:mastra``: one agent
``bench`` whose model streams the same ``N_TOKENS`` text-deltas on every call (as the Mastra side's
``bench/reference/mastra-chat-server.mjs``)."""

from __future__ import annotations

import os

from _token_model import TokenModel

from agentstream import Agent, Mastra

N_TOKENS = int(os.environ.get("BENCH_SERVE_TOKENS", "300"))

mastra = Mastra(agents={"bench": Agent(id="bench", instructions="Be brief.", model=TokenModel(N_TOKENS))})
