"""``Mastra``: the registry of agents (``mastra.get_agent(id)``)."""

from __future__ import annotations

from collections.abc import Mapping

from .agent import Agent

__all__ = ["Mastra"]


class Mastra:
    """Holds the application's agents by registration key (Mastra's ``new Mastra({agents})``)."""

    def __init__(self, *, agents: Mapping[str, Agent] | None = None) -> None:
        self._agents: dict[str, Agent] = {}
        for key, agent in (agents or {}).items():
            self.register_agent(key, agent)

    def register_agent(self, key: str, agent: Agent) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"Mastra agents must be Agent instances, got {type(agent).__name__} for {key!r}")
        self._agents[key] = agent

    def get_agent(self, key: str) -> Agent:
        """The agent registered under ``key`` (or whose ``id`` is ``key``)."""
        agent = self._agents.get(key)
        if agent is None:
            agent = next((a for a in self._agents.values() if a.id == key), None)
        if agent is None:
            known = ", ".join(sorted(self._agents)) or "none"
            raise KeyError(f"agent {key!r} is not registered (registered: {known})")
        return agent

    def get_agents(self) -> dict[str, Agent]:
        return dict(self._agents)
