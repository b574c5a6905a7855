"""How a tool may run as a background task: the tool's own setting and the agent's override.

Mastra: ``background-tasks/types.ts`` (``createTool({background})``, ``new Agent({backgroundTasks})``).
These live with the tools (not in `agentstream.background`) because ``Tool`` and ``Agent`` take
them at construction; the background package reads them when it runs a tool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast

from .._validate import check_count, check_ms, from_mapping

__all__ = ["AgentBackgroundConfig", "AgentToolBackgroundConfig", "TaskCallback", "ToolBackgroundConfig"]

TaskCallback: TypeAlias = Callable[[Any], object]
"""Called with the task record (``agentstream.storage.BackgroundTask``); may be async."""


@dataclass(frozen=True, slots=True)
class ToolBackgroundConfig:
    """``createTool({background: {...}})``."""

    enabled: bool = False
    default_disposition: Literal["foreground", "deferred"] = "deferred"
    timeout_ms: int | None = None
    max_retries: int | None = None
    wait_timeout_ms: int | None = None
    on_complete: TaskCallback | None = None
    on_failed: TaskCallback | None = None

    def __post_init__(self) -> None:
        if self.default_disposition not in ("foreground", "deferred"):
            raise ValueError(
                f"default_disposition must be 'foreground' or 'deferred', got {self.default_disposition!r}"
            )
        check_ms("timeout_ms", self.timeout_ms, allow_none=True)
        if self.max_retries is not None:
            check_count("max_retries", self.max_retries)

    @classmethod
    def from_value(
        cls, value: ToolBackgroundConfig | Mapping[str, Any] | bool | None
    ) -> ToolBackgroundConfig | None:
        """Build the config from `Tool(background=...)`: `True`/`False`, a dict, a config or `None`."""
        if value is None or isinstance(value, cls):
            return value
        if isinstance(value, bool):
            return cls(enabled=value)
        if isinstance(value, Mapping):
            data = dict(value)
            retries = data.pop("retries", None)  # Mastra's older `retries: {maxRetries}` spelling
            if isinstance(retries, Mapping) and "max_retries" in retries:
                data.setdefault("max_retries", retries["max_retries"])
            return cast(ToolBackgroundConfig, from_mapping(cls, data, "tool background"))
        raise TypeError(f"tool background config must be a dict or ToolBackgroundConfig, got {value!r}")


@dataclass(frozen=True, slots=True)
class AgentToolBackgroundConfig:
    """One tool's background setting on an agent (`Agent(background_tasks={"tools": {name: ...}})`)."""

    enabled: bool
    timeout_ms: int | None = None
    default_disposition: Literal["foreground", "deferred"] | None = None


@dataclass(frozen=True, slots=True)
class AgentBackgroundConfig:
    """``new Agent({backgroundTasks: {...}})``."""

    disabled: bool = False
    tools: Mapping[str, bool | AgentToolBackgroundConfig | Mapping[str, Any]] | Literal["all"] | None = None
    concurrency: int | None = None
    wait_timeout_ms: int | None = None
    on_task_complete: TaskCallback | None = None
    on_task_failed: TaskCallback | None = None

    @classmethod
    def from_value(
        cls, value: AgentBackgroundConfig | Mapping[str, Any] | None
    ) -> AgentBackgroundConfig | None:
        """Build the config from `Agent(background_tasks=...)`: a dict, a config or `None`; `TypeError` for
        anything else.
        """
        if value is None or isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            return cast(AgentBackgroundConfig, from_mapping(cls, value, "agent background_tasks"))
        raise TypeError(f"agent background config must be a dict or AgentBackgroundConfig, got {value!r}")

    def tool_config(self, tool_name: str) -> AgentToolBackgroundConfig | None:
        """This agent's background setting for tool `tool_name` (`None` when the agent does not override it)."""
        if self.tools is None:
            return None
        if self.tools == "all":
            return AgentToolBackgroundConfig(enabled=True)
        if isinstance(self.tools, str):
            raise ValueError(f"agent background tools must be 'all' or a mapping, got {self.tools!r}")
        key = _strip_prefix(tool_name)
        entry = self.tools.get(tool_name, self.tools.get(key))
        if entry is None:
            return None
        if isinstance(entry, bool):
            return AgentToolBackgroundConfig(enabled=entry)
        if isinstance(entry, AgentToolBackgroundConfig):
            return entry
        return cast(
            AgentToolBackgroundConfig,
            from_mapping(AgentToolBackgroundConfig, entry, f"tools[{tool_name!r}]"),
        )


def _strip_prefix(tool_name: str) -> str:
    for prefix in ("agent-", "workflow-"):
        if tool_name.startswith(prefix):
            return tool_name[len(prefix) :]
    return tool_name
