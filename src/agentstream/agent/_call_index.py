"""Which suspended run waits for which tool call, as this agent object saw them suspend: so that
``approve_tool_call(tool_call_id=...)`` (a Mastra habit: the chunk names the call) finds the run
without its ``run_id``. Only runs suspended in this process are known; elsewhere ``run_id`` is
needed, and the error says so."""

from __future__ import annotations

__all__ = ["SuspendedCalls"]


class SuspendedCalls:
    """``tool_call_id → {run_id}`` of this agent's runs that are suspended now (in this process)."""

    def __init__(self) -> None:
        self._runs: dict[str, set[str]] = {}

    def add(self, tool_call_id: str, run_id: str) -> None:
        """Run ``run_id`` now waits for ``tool_call_id`` (and no longer for any other call)."""
        self.discard(run_id)
        self._runs.setdefault(tool_call_id, set()).add(run_id)

    def discard(self, run_id: str) -> None:
        """Run ``run_id`` is over (or waits no more)."""
        for call in [c for c, runs in self._runs.items() if run_id in runs]:
            self._runs[call].discard(run_id)
            if not self._runs[call]:
                del self._runs[call]

    def run_for(self, agent_id: str, run_id: str | None, tool_call_id: str) -> str:
        """``run_id`` if given, else the one suspended run of this agent waiting for ``tool_call_id``."""
        if run_id is not None:
            if not isinstance(run_id, str) or not run_id:
                raise ValueError(f"run_id must be the suspended run's id (a non-empty str), got {run_id!r}")
            return run_id
        if not tool_call_id:
            raise TypeError(
                f"agent {agent_id!r}: give run_id= (every chunk of the run carries it: chunk.run_id, "
                "output.run_id) or tool_call_id= of the call the run waits for"
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
