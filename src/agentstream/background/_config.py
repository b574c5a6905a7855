"""Background-task configuration and the pure decisions the agent loop makes with it.

Mastra: ``background-tasks/types.ts`` (config shapes and defaults), ``resolve-config.ts`` (whether a
call runs in the background), ``schema-injection.ts`` (the ``_background`` argument),
``system-prompt.ts`` (the prompt section) and ``stream-until-idle-helpers.ts`` (the continuation
directive). Keys are snake_case; ``Mastra(background_tasks={...})`` passes a dict that
``BackgroundTaskManagerConfig.from_value`` turns into the dataclass.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

from .._validate import check_count, check_ms, from_mapping
from ..tools import AgentBackgroundConfig, AgentToolBackgroundConfig, TaskCallback, ToolBackgroundConfig

__all__ = [
    "BACKGROUND_OVERRIDE_JSON_SCHEMA",
    "AgentBackgroundConfig",
    "AgentToolBackgroundConfig",
    "BackgroundTaskManagerConfig",
    "Backpressure",
    "CleanupConfig",
    "Disposition",
    "ResolvedBackgroundConfig",
    "RetryConfig",
    "TaskOutcome",
    "ToolBackgroundConfig",
    "append_to_system_prompt",
    "background_system_prompt",
    "continuation_directive",
    "inject_background_schema",
    "is_background_eligible",
    "placeholder_result_text",
    "resolve_background_config",
    "resumed_result_text",
]

Backpressure = Literal["queue", "reject", "fallback-sync"]
Disposition = Literal["foreground", "deferred", "awaited"]
ManagerMode = Literal["full", "producer", "worker"]
_BACKPRESSURE: tuple[str, ...] = get_args(Backpressure)
_DISPOSITIONS: tuple[str, ...] = get_args(Disposition)


@dataclass(frozen=True, slots=True)
class RetryConfig:
    """``defaultRetries``. Only ``max_retries`` is read (by Mastra too): retries re-run immediately."""

    max_retries: int = 0
    retry_delay_ms: int = 1000
    backoff_multiplier: float = 2
    max_retry_delay_ms: int = 30_000
    retryable_errors: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        check_count("max_retries", self.max_retries)


@dataclass(frozen=True, slots=True)
class CleanupConfig:
    """How long finished tasks stay in storage (`completed_ttl_ms`, `failed_ttl_ms`) and how often cleanup
    runs.
    """

    completed_ttl_ms: int = 3_600_000
    failed_ttl_ms: int = 86_400_000
    cleanup_interval_ms: int = 60_000

    def __post_init__(self) -> None:
        check_ms("completed_ttl_ms", self.completed_ttl_ms)
        check_ms("failed_ttl_ms", self.failed_ttl_ms)
        check_ms("cleanup_interval_ms", self.cleanup_interval_ms)


@dataclass(frozen=True, slots=True)
class BackgroundTaskManagerConfig:
    """``BackgroundTaskManagerConfig`` with Mastra's defaults, plus leases and bounds of our own.

    ``cleanup``: finished task records are deleted ``completed_ttl_ms`` (completed) or
    ``failed_ttl_ms`` (failed / cancelled / timed_out) after they finished, checked every
    ``cleanup_interval_ms``. On by default (Mastra cleans up only when ``cleanup`` is configured;
    records would pile up forever); ``cleanup=None`` (or ``False`` in a dict) turns the periodic
    cleanup off, `BackgroundTaskManager.cleanup` still applies the default TTLs when called.

    ``lease_ms`` / ``heartbeat_interval_ms``: every ``pending``/``running`` task a manager holds
    carries its owner id and a lease that the manager renews every ``heartbeat_interval_ms``
    (default a third of ``lease_ms``). Another manager on the same store takes a task over only
    after its lease expired, i.e. when its owner stopped renewing for ``lease_ms``.

    ``max_queued``: tasks waiting in this process for a free slot (``backpressure='queue'``); when
    full, `BackgroundTaskManager.enqueue` raises `ConcurrencyLimitError`. ``None``:
    unbounded.
    """

    enabled: bool = False
    mode: ManagerMode = "full"
    global_concurrency: int = 10
    per_agent_concurrency: int = 5
    backpressure: Backpressure = "queue"
    default_timeout_ms: int = 300_000
    default_retries: RetryConfig = field(default_factory=RetryConfig)
    cleanup: CleanupConfig | None = field(default_factory=CleanupConfig)
    recover_stale_tasks_on_start: bool = True
    lease_ms: int = 30_000
    heartbeat_interval_ms: int | None = None
    max_queued: int | None = 1000
    progress_throttle_ms: int | None = None
    wait_timeout_ms: int | None = None
    shutdown_grace_ms: int = 5_000
    on_task_complete: TaskCallback | None = None
    on_task_failed: TaskCallback | None = None
    on_task_cancelled: TaskCallback | None = None
    remote: Any = None
    """A `RemoteTasks` engine (``agentstream.durable.DurableBackground(url)``): tasks run on workers."""
    stream_store: Any = None
    """A shared ``StreamStore``: every task's chunks go there, and managers follow each other's tasks."""
    follow_interval_ms: int = 500
    """With a ``stream_store``: how often the storage is polled for other managers' tasks to follow."""

    def __post_init__(self) -> None:
        check_count("global_concurrency", self.global_concurrency, minimum=1)
        check_count("per_agent_concurrency", self.per_agent_concurrency, minimum=1)
        if self.backpressure not in _BACKPRESSURE:
            raise ValueError(f"backpressure must be one of {_BACKPRESSURE}, got {self.backpressure!r}")
        if self.mode != "full":
            raise ValueError(
                f"mode {self.mode!r} is not supported: this port runs producer and worker in one process ('full')"
            )
        check_ms("default_timeout_ms", self.default_timeout_ms)
        check_ms("progress_throttle_ms", self.progress_throttle_ms, allow_none=True)
        check_ms("wait_timeout_ms", self.wait_timeout_ms, allow_none=True)
        check_ms("shutdown_grace_ms", self.shutdown_grace_ms)
        check_count("lease_ms", self.lease_ms, minimum=1)
        check_count("follow_interval_ms", self.follow_interval_ms, minimum=1)
        if self.heartbeat_interval_ms is not None:
            check_count("heartbeat_interval_ms", self.heartbeat_interval_ms, minimum=1)
            if self.heartbeat_interval_ms >= self.lease_ms:
                raise ValueError(
                    f"heartbeat_interval_ms ({self.heartbeat_interval_ms}) must be shorter than lease_ms "
                    f"({self.lease_ms}), or every lease lapses before it is renewed"
                )
        if self.max_queued is not None:
            check_count("max_queued", self.max_queued, minimum=0)
        if self.cleanup is not None and not isinstance(self.cleanup, CleanupConfig):
            raise ValueError(f"cleanup must be a CleanupConfig, a dict or None, got {self.cleanup!r}")

    @property
    def heartbeat_ms(self) -> int:
        """How often leases are renewed and expired ones reclaimed."""
        if self.heartbeat_interval_ms is not None:
            return self.heartbeat_interval_ms
        return max(1, self.lease_ms // 3)

    @property
    def cleanup_ttls(self) -> CleanupConfig:
        """The cleanup settings in force (the defaults when `cleanup` was not given)."""
        return self.cleanup if self.cleanup is not None else CleanupConfig()

    @classmethod
    def from_value(
        cls, value: BackgroundTaskManagerConfig | Mapping[str, Any] | None
    ) -> BackgroundTaskManagerConfig:
        """Accept the dataclass, a snake_case dict (``Mastra(background_tasks={...})``) or ``None``.

        A dict given at all means "enabled" unless it says ``enabled: False`` — as
        ``new Mastra({backgroundTasks: {...}})`` is used in practice; the dataclass default stays
        ``enabled=False`` like Mastra's type.
        """
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(
                f"background task config must be a dict or BackgroundTaskManagerConfig, got {value!r}"
            )
        data = dict(value)
        data.setdefault("enabled", True)
        retries = data.get("default_retries")
        if isinstance(retries, Mapping):
            data["default_retries"] = from_mapping(RetryConfig, retries, "default_retries")
        cleanup = data.get("cleanup")
        if isinstance(cleanup, Mapping):
            data["cleanup"] = from_mapping(CleanupConfig, cleanup, "cleanup")
        elif cleanup is False:
            data["cleanup"] = None
        return cast(BackgroundTaskManagerConfig, from_mapping(cls, data, "background_tasks"))


@dataclass(frozen=True, slots=True)
class ResolvedBackgroundConfig:
    """What a given tool call does once tool, agent and per-call settings are merged: run in background or
    not, with which timeout and retries.
    """

    run_in_background: bool
    disposition: Disposition
    timeout_ms: int
    max_retries: int
    eligible: bool
    args: dict[str, Any]
    """The call's arguments without ``_background``."""


def is_background_eligible(
    tool_name: str,
    tool_config: ToolBackgroundConfig | Mapping[str, Any] | bool | None,
    agent_config: AgentBackgroundConfig | Mapping[str, Any] | None = None,
) -> bool:
    """``agentToolConfig?.enabled ?? toolConfig?.enabled ?? false``; an agent with ``disabled`` never."""
    agent = AgentBackgroundConfig.from_value(agent_config)
    if agent is not None and agent.disabled:
        return False
    agent_tool = agent.tool_config(tool_name) if agent is not None else None
    if agent_tool is not None:
        return agent_tool.enabled
    tool = ToolBackgroundConfig.from_value(tool_config)
    return tool.enabled if tool is not None else False


def _default_disposition(
    tool_name: str, tool: ToolBackgroundConfig | None, agent: AgentBackgroundConfig | None
) -> Literal["foreground", "deferred"]:
    agent_tool = agent.tool_config(tool_name) if agent is not None else None
    if agent_tool is not None and agent_tool.default_disposition is not None:
        return agent_tool.default_disposition
    return tool.default_disposition if tool is not None else "deferred"


def resolve_background_config(
    *,
    args: Mapping[str, Any] | None,
    tool_name: str,
    tool_config: ToolBackgroundConfig | Mapping[str, Any] | bool | None = None,
    agent_config: AgentBackgroundConfig | Mapping[str, Any] | None = None,
    manager_config: BackgroundTaskManagerConfig | Mapping[str, Any] | None = None,
) -> ResolvedBackgroundConfig:
    """Decide how one tool call runs (Mastra 1.71 ``resolveBackgroundConfig``).

    ``args['_background']`` (the model's per-call override) is removed from the returned ``args``
    (the input mapping is not mutated). A malformed override is ignored, as zod's optional field
    would be stripped.
    """
    call_args = dict(args or {})
    raw_override = call_args.pop("_background", None)
    override: Mapping[str, Any] = raw_override if isinstance(raw_override, Mapping) else {}
    tool = ToolBackgroundConfig.from_value(tool_config)
    agent = AgentBackgroundConfig.from_value(agent_config)
    manager = BackgroundTaskManagerConfig.from_value(manager_config) if manager_config is not None else None
    eligible = is_background_eligible(tool_name, tool, agent)

    disposition: Disposition
    requested = override.get("disposition")
    enabled = override.get("enabled")
    if requested in _DISPOSITIONS:
        disposition = cast(Disposition, requested)
    elif enabled is False:
        disposition = "foreground"
    elif enabled is True:
        disposition = "deferred"
    else:
        disposition = _default_disposition(tool_name, tool, agent)
    if not eligible:
        disposition = "foreground"

    agent_tool = agent.tool_config(tool_name) if agent is not None else None
    timeout_ms = _first_number(
        override.get("timeoutMs", override.get("timeout_ms")),
        agent_tool.timeout_ms if agent_tool is not None else None,
        tool.timeout_ms if tool is not None else None,
        manager.default_timeout_ms if manager is not None else None,
        300_000,
    )
    max_retries = _first_number(
        override.get("maxRetries", override.get("max_retries")),
        tool.max_retries if tool is not None else None,
        manager.default_retries.max_retries if manager is not None else None,
        0,
    )
    return ResolvedBackgroundConfig(
        run_in_background=disposition != "foreground",
        disposition=disposition,
        timeout_ms=timeout_ms,
        max_retries=max_retries,
        eligible=eligible,
        args=call_args,
    )


def _first_number(*values: object) -> int:
    for value in values:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return int(value)
    return 0


# ------------------------------------------------------------------------------ schema and prompt

BACKGROUND_OVERRIDE_JSON_SCHEMA: dict[str, Any] = {
    "description": (
        "Optional: override how this specific call executes (foreground, deferred, or awaited). When omitted, "
        "the tool's configured default disposition applies. The enabled boolean remains supported for compatibility."
    ),
    "type": "object",
    "properties": {
        "enabled": {
            "description": "Force deferred (true) or foreground (false) execution for this call.",
            "type": "boolean",
        },
        "disposition": {
            "description": "Choose foreground, deferred, or awaited execution for this call.",
            "type": "string",
            "enum": ["foreground", "deferred", "awaited"],
        },
        "timeoutMs": {"description": "Override timeout in milliseconds for this call.", "type": "number"},
        "maxRetries": {"description": "Override maximum retry attempts for this call.", "type": "number"},
    },
    "additionalProperties": False,
}
"""The ``_background`` property as Mastra 1.71 sends it to the model (key order included)."""


def inject_background_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of an object JSON Schema with the optional ``_background`` property appended.

    ``required`` is untouched; a schema that is not an object schema is returned unchanged (copied).
    """
    out = copy.deepcopy(dict(schema))
    if out.get("type") != "object":
        return out
    properties = dict(out.get("properties") or {})
    properties["_background"] = copy.deepcopy(BACKGROUND_OVERRIDE_JSON_SCHEMA)
    # keep the key order Mastra produces: properties stay where they were
    out["properties"] = properties
    return out


_PROMPT_HEAD = (
    "You have the ability to run certain tools in the background while continuing the conversation. "
    "The following tools support background execution:\n"
)
_PROMPT_TAIL = (
    '\n\nFor any of these tools, you can include a "_background" field in the tool arguments to override the '
    "default:\n"
    '  "_background": { "disposition": "foreground" | "deferred" | "awaited", "timeoutMs": number, '
    '"maxRetries": number }\n\n'
    'All fields in "_background" are optional. Only include what you want to override. Tools listed with '
    '"default: background" run in the background unless you set "disposition": "foreground". Tools listed with '
    '"default: foreground" run inline unless you explicitly request "deferred" or "awaited" \u2014 for those '
    'tools, omitting "_background" never starts background work.\n\n'
    "Dispositions:\n"
    '- "deferred": the tool runs in the background while you continue; you receive a placeholder result with a '
    "task ID and are notified when the task completes.\n"
    '- "awaited": the tool runs as a durable background task but your run waits for its result before '
    "continuing.\n"
    '- "foreground": the tool runs inline and returns its real result immediately.\n\n'
    "Guidelines:\n"
    "- Use background execution when the user doesn't need the result immediately, or when you're launching "
    "multiple independent tasks.\n"
    "- Use foreground execution when the user is directly waiting for the result and the conversation can't "
    "continue without it.\n"
    "- When a tool runs deferred, you'll receive a placeholder result with a task ID. You can reference this in "
    "your response to the user.\n\n"
    'IMPORTANT: "_background" field is always an object. The fields in the _background field should be inside '
    "the _background object, not outside of it."
)


def background_system_prompt(
    tools: Mapping[str, ToolBackgroundConfig | Mapping[str, Any] | bool | None],
    agent_config: AgentBackgroundConfig | Mapping[str, Any] | None = None,
) -> str | None:
    """The section appended (after a blank line) to the first system message, or ``None``.

    ``tools`` maps each tool name to its tool-level background config (``None`` when it has none).
    """
    agent = AgentBackgroundConfig.from_value(agent_config)
    lines: list[str] = []
    for name, raw in tools.items():
        tool = ToolBackgroundConfig.from_value(raw)
        if not is_background_eligible(name, tool, agent):
            continue
        if _default_disposition(name, tool, agent) == "deferred":
            lines.append(f"- {name} (default: background)")
        else:
            lines.append(f'- {name} (default: foreground \u2014 opt in with "_background")')
    if not lines:
        return None
    return _PROMPT_HEAD + "\n".join(lines) + _PROMPT_TAIL


def append_to_system_prompt(messages: MutableMapping[str, Any] | list[dict[str, Any]], section: str) -> None:
    """Append ``section`` to the first system message of a V2 prompt (``\\n\\n`` separated), in place."""
    if not isinstance(messages, list):
        raise TypeError("messages must be a list of prompt messages")
    for message in messages:
        if message.get("role") == "system" and isinstance(message.get("content"), str):
            message["content"] = f"{message['content']}\n\n{section}" if message["content"] else section
            return
    messages.insert(0, {"role": "system", "content": section})


def placeholder_result_text(task_id: str, tool_name: str) -> str:
    """The tool result the model sees for a deferred call."""
    return (
        f'Background task started. Task ID: {task_id}. The tool "{tool_name}" is running in the background. '
        "You will be notified when it completes."
    )


def resumed_result_text(task_id: str, tool_name: str) -> str:
    """The placeholder tool result the model sees while a resumed task runs again in the background."""
    return (
        f'Background task resumed. Task ID: {task_id}. The tool "{tool_name}" is running in the background. '
        "You will be notified when it completes."
    )


TaskOutcome = Literal["completed", "failed", "cancelled", "suspended"]


def continuation_directive(outcomes: Iterable[tuple[TaskOutcome, str, str, str]]) -> str:
    """The system ``context`` message of an untilIdle continuation turn (not persisted).

    ``outcomes``: ``(kind, tool_call_id, tool_name, task_id)`` in the order the terminal chunks
    arrived. Suspend payloads are never included.
    """
    groups: dict[str, list[str]] = {"completed": [], "failed": [], "cancelled": [], "suspended": []}
    for kind, tool_call_id, tool_name, task_id in outcomes:
        groups[kind].append(f"{tool_call_id} ({tool_name}), background task {task_id}")
    parts = [
        "IMPORTANT: These tool calls ran as background tasks. Their authoritative results may now look like "
        "ordinary tool results after reconciliation; do not reinterpret them as foreground calls."
    ]
    if groups["completed"]:
        parts.append(
            "IMPORTANT: The following tool-call IDs completed successfully: "
            + ", ".join(groups["completed"])
            + ". Their results are now in the conversation. Do not call the same tool again \u2014 the result is "
            "already available."
        )
    if groups["failed"]:
        parts.append(
            "IMPORTANT: The following tool-call IDs failed: "
            + ", ".join(groups["failed"])
            + ". Their failure information is now in the conversation. Do not retry these tools unless the user "
            "explicitly requests it."
        )
    if groups["cancelled"]:
        parts.append(
            "IMPORTANT: The following tool-call IDs were cancelled by the user before completion: "
            + ", ".join(groups["cancelled"])
            + ". These tasks do not have results. Do not treat them as completed and do not call the same tool "
            "again unless the user explicitly requests it."
        )
    if groups["suspended"]:
        parts.append(
            "IMPORTANT: The following tool-call IDs are suspended: "
            + ", ".join(groups["suspended"])
            + ". Do not attempt to resume them; let the user know they are waiting for explicit resume input."
        )
    return " ".join(parts)
