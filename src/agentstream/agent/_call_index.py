"""Which suspended run waits for which tool call, and which memory thread's run is suspended, as
this agent object saw them suspend: so that ``approve_tool_call(tool_call_id=...)`` (a Mastra
habit: the chunk names the call) or ``approve_tool_call(memory={"thread": ...})`` (the thread
knows its run) finds the run without its ``run_id``. Only runs suspended in this process are known;
elsewhere ``run_id`` is needed, and the error says so."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SuspendedCalls", "thread_of"]


def thread_of(options: Mapping[str, Any]) -> str | None:
    """The thread id of a leg's ``memory=`` option, if it names one (checked fully later)."""
    memory = options.get("memory")
    thread = memory.get("thread") if isinstance(memory, Mapping) else None
    if isinstance(thread, Mapping):
        thread = thread.get("id")
    return thread if isinstance(thread, str) and thread else None


LIMIT = 10_000
"""Runs remembered at most: a server whose users leave approvals unanswered forgets the oldest
(their answer then needs ``run_id``, as from another process)."""


class SuspendedCalls:
    """``tool_call_id → {run_id}`` of this agent's runs that are suspended now (in this process)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._runs: dict[str, set[str]] = {}
        self._threads: dict[str, str] = {}
        self._order: dict[str, None] = {}  # run ids, oldest first
        self._limit = limit

    def add(self, tool_call_id: str, run_id: str) -> None:
        """Run ``run_id`` now waits for ``tool_call_id`` (and no longer for any other call)."""
        self.discard(run_id)
        self._runs.setdefault(tool_call_id, set()).add(run_id)
        self._remember(run_id)

    def _remember(self, run_id: str) -> None:
        self._order[run_id] = None
        while len(self._order) > self._limit:
            self.discard(next(iter(self._order)))

    def add_thread(self, thread_id: str, run_id: str) -> None:
        """Memory thread ``thread_id``'s last run, ``run_id``, is suspended."""
        self._threads[thread_id] = run_id
        self._remember(run_id)

    def discard(self, run_id: str) -> None:
        """Run ``run_id`` is over (or waits no more)."""
        self._order.pop(run_id, None)
        for call in [c for c, runs in self._runs.items() if run_id in runs]:
            self._runs[call].discard(run_id)
            if not self._runs[call]:
                del self._runs[call]
        for thread in [t for t, run in self._threads.items() if run == run_id]:
            del self._threads[thread]

    def run_for(
        self, agent_id: str, run_id: str | None, tool_call_id: str, thread_id: str | None = None
    ) -> str:
        """``run_id`` if given, else the one suspended run of this agent waiting for ``tool_call_id``,
        else the suspended run of memory thread ``thread_id``."""
        if run_id is not None:
            if not isinstance(run_id, str) or not run_id:
                raise ValueError(f"run_id must be the suspended run's id (a non-empty str), got {run_id!r}")
            return run_id
        if not tool_call_id and thread_id is not None:
            found = self._threads.get(thread_id)
            if found is None:
                raise ValueError(
                    f"agent {agent_id!r}: memory thread {thread_id!r} has no run suspended in this process: "
                    "pass run_id= (await agent.suspended_run(thread_id=...) gives it, from any process)"
                )
            return found
        if not tool_call_id:
            raise TypeError(
                f"agent {agent_id!r}: give run_id= (every chunk of the run carries it: chunk.run_id, "
                "output.run_id), tool_call_id= of the call the run waits for, or memory= of its thread"
            )
        runs = sorted(self._runs.get(tool_call_id, ()))
        if len(runs) == 1:
            return runs[0]
        if not runs:
            raise ValueError(
                f"agent {agent_id!r}: no run suspended in this process waits for tool call "
                f"{tool_call_id!r}: pass run_id= (chunk.run_id of its tool-call-approval chunk)"
            )
        raise ValueError(
            f"agent {agent_id!r}: {len(runs)} suspended runs wait for a tool call {tool_call_id!r} "
            f"({', '.join(repr(r) for r in runs)}): pass run_id= to say which"
        )
