"""The checkpoint seam: where a durable-execution engine makes a run's model and tool calls steps.

The agent package does not know the engine (``agentstream.durable`` sits above it): the engine
registers a `CheckpointSeam` by an explicit call (``agentstream.durable.install_checkpoints()``,
which a worker's launch makes; importing a package installs nothing), and every run
asks it, at the start, whether it runs inside one of the engine's workflows. Without a registered
seam a run pays one list check; with one, one context lookup (docs/decisions/durable.md, "Checkpointed
agent runs").
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..models import LanguageModel
    from ._hooks import LoopHooks

__all__ = ["CheckpointSeam", "RunCheckpoint", "begin_checkpointed_run", "new_id", "set_checkpoint_seam"]


class RunCheckpoint(Protocol):
    """One run inside a durable workflow: its ids, its model and its hooks, checkpointed."""

    def new_id(self) -> str:
        """An id that is the same when the workflow runs again after a crash (run and message ids)."""
        ...

    def model(self, model: LanguageModel) -> LanguageModel:
        """``model`` whose calls are steps (recorded parts replayed instead of calling it again)."""
        ...

    def hooks(self, inner: LoopHooks) -> LoopHooks:
        """``inner`` with every ``execute_tool`` a step (recorded results replayed)."""
        ...


@runtime_checkable
class CheckpointSeam(Protocol):
    """A durable-execution engine (implemented by ``agentstream.durable``)."""

    def begin_run(self) -> RunCheckpoint | None:
        """The checkpoint of a run starting now; ``None`` outside the engine's workflows."""
        ...


_seams: list[CheckpointSeam] = []


def set_checkpoint_seam(seam: CheckpointSeam | None) -> None:
    """Register the engine whose workflows checkpoint runs (``None``: none; replaces an earlier one)."""
    _seams[:] = [] if seam is None else [seam]


def begin_checkpointed_run() -> RunCheckpoint | None:
    """The run's checkpoint when it starts inside a durable workflow, else ``None``."""
    return _seams[0].begin_run() if _seams else None


def new_id(checkpoint: RunCheckpoint | None) -> str:
    """A fresh id: a uuid4, or (inside a workflow) one a replay of the workflow gives again."""
    return str(uuid.uuid4()) if checkpoint is None else checkpoint.new_id()
