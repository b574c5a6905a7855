"""``Mastra``: the registry of agents, their storage and the background-task manager."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .agent import Agent
from .storage import InMemoryStore, Storage
from .workflows import Workflow

if TYPE_CHECKING:
    from .background import BackgroundTaskManager, BackgroundTaskManagerConfig

__all__ = ["Mastra"]

log = logging.getLogger("agentstream")


class Mastra:
    """Holds the application's agents and workflows by registration key (Mastra's ``new Mastra({...})``).

    * ``workflows`` — ``{key: workflow}``; ``get_workflow(key)``; their runs' snapshots go to ``storage``.

    * ``storage`` — every domain (memory threads/messages, background tasks, ...). Default: an
      ``InMemoryStore``, as in Mastra (nothing survives the process);
      pass ``SQLiteStore(path)`` / ``PostgresStore(dsn)`` to persist. Schema migrations run when the
      store is first used.
    * ``background_tasks`` — ``True`` or a ``BackgroundTaskManagerConfig``
      dict (``global_concurrency`` 10, ``per_agent_concurrency`` 5, ``backpressure`` ``"queue"``,
      ``default_timeout_ms`` 300 000, ``default_retries``, ``cleanup``, callbacks...). A dict without
      ``enabled`` counts as enabled (giving a config is opting in; Mastra requires ``enabled``).
      A ready ``BackgroundTaskManager`` over the same storage is accepted too (e.g. with a
      ``clock``). Then ``background_task_manager`` exists (started lazily on first use) and the agents'
      tools with ``background={"enabled": True}`` run as background tasks. Several processes:
      ``"remote": DurableBackground(url)`` runs every task on ``agentstream worker`` processes, and
      ``"stream_store": RedisStreamStore...`` lets every server follow every task.

    Close with ``await mastra.aclose()`` or ``async with Mastra(...) as mastra``: stops the manager
    and closes the storage if this ``Mastra`` created it.
    """

    def __init__(
        self,
        *,
        agents: Mapping[str, Agent] | None = None,
        workflows: Mapping[str, Workflow] | None = None,
        storage: Storage | None = None,
        background_tasks: BackgroundTaskManagerConfig
        | Mapping[str, Any]
        | bool
        | BackgroundTaskManager
        | None = None,
    ) -> None:
        from .background import BackgroundTaskManager

        self._background_task_manager: BackgroundTaskManager | None = None
        if isinstance(background_tasks, BackgroundTaskManager):
            if storage is not None and storage is not background_tasks.storage:
                raise ValueError("background_tasks: the manager must use the Mastra's storage")
            storage = storage or background_tasks.storage
        self._owns_storage = storage is None
        self.storage: Storage = storage if storage is not None else InMemoryStore()
        if isinstance(background_tasks, BackgroundTaskManager):
            self._background_task_manager = background_tasks if background_tasks.config.enabled else None
            config = None
        else:
            config = _background_config(background_tasks)
        if config is not None and config.enabled:
            self._background_task_manager = BackgroundTaskManager(self.storage, config)
        self._agents: dict[str, Agent] = {}
        for key, agent in (agents or {}).items():
            self.register_agent(key, agent)
        self._workflows: dict[str, Workflow] = {}
        for key, workflow in (workflows or {}).items():
            self.register_workflow(key, workflow)

    @property
    def background_task_manager(self) -> BackgroundTaskManager | None:
        """The manager (``None`` unless ``background_tasks`` is enabled). ``resume(task_id, data)``,
        ``cancel``, ``list_tasks``, ``stream``... start it when needed."""
        return self._background_task_manager

    def register_agent(self, key: str, agent: Agent) -> None:
        """Register `agent` under `key` (as `Mastra(agents={key: agent})` does).

        The agent gets this `Mastra`'s storage and background-task manager; a non-`Agent` raises
        `TypeError`.
        """
        if not isinstance(agent, Agent):
            raise TypeError(f"Mastra agents must be Agent instances, got {type(agent).__name__} for {key!r}")
        self._agents[key] = agent
        manager = self._background_task_manager
        background = None
        if manager is not None:
            from .background import AgentBackground

            background = AgentBackground(manager)
            # executors for tasks recovered or resumed after a restart ("<agent_id>:<tool>");
            # the agent's runs get the background dispatch hooks through the seam (Agent.stream)
            background.register_tools(agent)
        agent._register_mastra(self, background)

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
        """A copy of the registered agents, by registration key."""
        return dict(self._agents)

    def register_workflow(self, key: str, workflow: Workflow) -> None:
        """Register `workflow` under `key` (as `Mastra(workflows={key: workflow})` does): its runs are
        saved in this `Mastra`'s storage and its steps see it as `context.mastra`."""
        if not isinstance(workflow, Workflow):
            raise TypeError(
                f"Mastra workflows must be Workflow instances (create_workflow(...).commit()), "
                f"got {type(workflow).__name__} for {key!r}"
            )
        self._workflows[key] = workflow
        workflow._register_mastra(self)

    def get_workflow(self, key: str) -> Workflow:
        """The workflow registered under ``key`` (or whose ``id`` is ``key``)."""
        workflow = self._workflows.get(key)
        if workflow is None:
            workflow = next((w for w in self._workflows.values() if w.id == key), None)
        if workflow is None:
            known = ", ".join(sorted(self._workflows)) or "none"
            raise KeyError(f"workflow {key!r} is not registered (registered: {known})")
        return workflow

    def get_workflows(self) -> dict[str, Workflow]:
        """A copy of the registered workflows, by registration key."""
        return dict(self._workflows)

    async def aclose(self) -> None:
        """Shut the background-task manager down (running tasks get its grace period; the ones
        still running stay ``running`` in storage and are recovered on the next start) and close
        the storage if it is the default one."""
        if self._background_task_manager is not None:
            await self._background_task_manager.shutdown()
        if self._owns_storage:
            await self.storage.close()

    async def __aenter__(self) -> Mastra:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _background_config(value: Any) -> BackgroundTaskManagerConfig | None:
    if value is None or value is False:
        return None
    from .background import BackgroundTaskManagerConfig

    if value is True:
        return BackgroundTaskManagerConfig(enabled=True)
    if isinstance(value, Mapping) and "enabled" not in value:
        value = {**value, "enabled": True}
    return BackgroundTaskManagerConfig.from_value(value)
