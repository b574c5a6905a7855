"""Background tasks: tool calls that run beside the agent loop (Mastra ``background-tasks/*``).

from agentstream.background import BackgroundTaskManager
from agentstream.storage import SQLiteStore

async with BackgroundTaskManager(SQLiteStore("tasks.db"), {"global_concurrency": 4},
                                 tools={"research": research_tool}) as manager:
    task = await manager.dispatch("research", {"topic": "x"}, tool_call_id="c1",
                                  agent_id="agent", run_id="run-1")
    async for chunk in manager.stream(agent_id="agent"):  # background-task-* chunks
        ...
"""

from __future__ import annotations

from ._agent_integration import UntilIdleOutput, stream_until_idle
from ._config import (
    BACKGROUND_OVERRIDE_JSON_SCHEMA,
    AgentBackgroundConfig,
    AgentToolBackgroundConfig,
    BackgroundTaskManagerConfig,
    Backpressure,
    CleanupConfig,
    Disposition,
    ResolvedBackgroundConfig,
    RetryConfig,
    TaskOutcome,
    ToolBackgroundConfig,
    append_to_system_prompt,
    background_system_prompt,
    continuation_directive,
    inject_background_schema,
    is_background_eligible,
    resolve_background_config,
    resumed_result_text,
)
from ._context import BackgroundTaskContext, BackgroundTaskWriter
from ._dispatch import AgentBackground
from ._errors import (
    BackgroundTaskError,
    BackgroundTasksDisabledError,
    ConcurrencyLimitError,
    InvalidTaskStateError,
    TaskNotFoundError,
    TaskReleased,
    TaskSuspended,
    TaskWaitTimeoutError,
)
from ._manager import (
    STALE_TASK_MESSAGE,
    BackgroundTaskChunk,
    BackgroundTaskManager,
    EnqueueResult,
    Executor,
    TaskHooks,
)
from ._remote import RemoteTasks

__all__ = [
    "BACKGROUND_OVERRIDE_JSON_SCHEMA",
    "STALE_TASK_MESSAGE",
    "AgentBackground",
    "AgentBackgroundConfig",
    "AgentToolBackgroundConfig",
    "BackgroundTaskChunk",
    "BackgroundTaskContext",
    "BackgroundTaskError",
    "BackgroundTaskManager",
    "BackgroundTaskManagerConfig",
    "BackgroundTaskWriter",
    "BackgroundTasksDisabledError",
    "Backpressure",
    "CleanupConfig",
    "ConcurrencyLimitError",
    "Disposition",
    "EnqueueResult",
    "Executor",
    "InvalidTaskStateError",
    "RemoteTasks",
    "ResolvedBackgroundConfig",
    "RetryConfig",
    "TaskHooks",
    "TaskNotFoundError",
    "TaskOutcome",
    "TaskReleased",
    "TaskSuspended",
    "TaskWaitTimeoutError",
    "ToolBackgroundConfig",
    "UntilIdleOutput",
    "append_to_system_prompt",
    "background_system_prompt",
    "continuation_directive",
    "inject_background_schema",
    "is_background_eligible",
    "resolve_background_config",
    "resumed_result_text",
    "stream_until_idle",
]
