"""Provider-defined tools: tools the model's provider runs itself (web search, code execution…).

They go into ``Agent(tools=[...])`` like any tool, and are sent to the model as the AI SDK's
``{"type": "provider-defined", "id": "<provider>.<tool>", "name", "args"}``; each provider turns them
into its own request field (OpenAI Responses ``tools[].type``, Anthropic server tools, Gemini's
``googleSearch`` / ``codeExecution`` / ``urlContext``, Bedrock's ``systemTool``). The provider runs
the call and streams its result: the call and result chunks carry ``providerExecuted: true`` and
the agent never executes them. A model whose provider does not know the tool says so in the step's
warnings (``unsupported-tool``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._tool import Tool

__all__ = [
    "ProviderTool",
    "anthropic_code_execution",
    "anthropic_web_search",
    "google_code_execution",
    "google_search",
    "google_url_context",
    "openai_web_search",
]


def _never(*_: Any) -> Any:
    raise RuntimeError("a provider-defined tool is run by the model's provider, not by the agent")


@dataclass
class ProviderTool(Tool):
    """A tool the provider runs (see the module docstring); build it with the functions below."""

    provider_id: str = ""
    """``"<provider>.<tool type>"``, e.g. ``"anthropic.web_search_20250305"``."""
    args: dict[str, Any] = field(default_factory=dict)
    """The tool's settings as the provider names them (camelCase, as the AI SDK passes them)."""

    def __post_init__(self) -> None:
        if "." not in self.provider_id:
            raise ValueError(f"provider tool {self.id!r}: provider_id must be '<provider>.<tool>'")
        super().__post_init__()

    def definition(self) -> dict[str, Any]:
        return {"type": "provider-defined", "id": self.provider_id, "name": self.id, "args": self.args}


def _tool(provider_id: str, name: str, description: str, **args: Any) -> ProviderTool:
    given = {key: value for key, value in args.items() if value is not None}
    return ProviderTool(
        id=name,
        description=description,
        input_schema={"type": "object"},
        execute=_never,
        provider_id=provider_id,
        args=given,
    )


def openai_web_search(
    *, search_context_size: str | None = None, user_location: dict[str, Any] | None = None
) -> ProviderTool:
    """OpenAI's web search (Responses API, ``openai.responses/…`` models)."""
    return _tool(
        "openai.web_search",
        "web_search",
        "Search the web.",
        searchContextSize=search_context_size,
        userLocation=user_location,
    )


def anthropic_web_search(
    *,
    max_uses: int | None = None,
    allowed_domains: list[str] | None = None,
    blocked_domains: list[str] | None = None,
    user_location: dict[str, Any] | None = None,
) -> ProviderTool:
    """Anthropic's web search server tool; its results also stream as ``source`` chunks."""
    return _tool(
        "anthropic.web_search_20250305",
        "web_search",
        "Search the web.",
        maxUses=max_uses,
        allowedDomains=allowed_domains,
        blockedDomains=blocked_domains,
        userLocation=user_location,
    )


def anthropic_code_execution() -> ProviderTool:
    """Anthropic's code execution server tool."""
    return _tool("anthropic.code_execution_20250522", "code_execution", "Run Python code.")


def google_search() -> ProviderTool:
    """Gemini's Google Search grounding; grounding chunks stream as ``source`` chunks."""
    return _tool("google.google_search", "google_search", "Search the web with Google.")


def google_code_execution() -> ProviderTool:
    """Gemini's code execution (a provider-executed ``code_execution`` call and its result)."""
    return _tool("google.code_execution", "code_execution", "Run Python code.")


def google_url_context() -> ProviderTool:
    """Gemini's URL context: the model reads the URLs in the prompt."""
    return _tool("google.url_context", "url_context", "Read the pages the prompt links to.")
