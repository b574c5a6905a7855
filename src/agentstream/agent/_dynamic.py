"""Dynamic agents: ``instructions``, ``model``, ``tools``, ``default_options`` and ``memory`` given as
functions of the run's `RequestContext` (Mastra's dynamic agent configuration).

Each function takes the context (as ``request_context=`` when it names that parameter or takes
``**kwargs``, else as its one positional argument) and may be async. They are called once per run,
when it starts (a new turn, or each turn of an until-idle stream), and the run goes on with an
agent whose values are the results (`resolved_agent`): everything after that sees a plain agent.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from .._request_context import RequestContext

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["DYNAMIC_FIELDS", "Dynamic", "check_dynamic_defaults", "dynamic_fields", "resolved_agent"]

_T = TypeVar("_T")
Dynamic: TypeAlias = Callable[..., _T | Awaitable[_T]]
"""A function of the run's `RequestContext` returning the value (or an awaitable of it)."""

DYNAMIC_FIELDS = ("instructions", "model", "tools", "default_options", "memory")

# What a dynamic ``default_options`` may not hold: the output is built before the run starts, so
# its callbacks and transforms must be known then (give them to `stream()` instead).
OUTPUT_OPTIONS = frozenset(
    {
        "on_step_finish",
        "on_finish",
        "on_error",
        "on_abort",
        "experimental_transform",
        "include_raw_chunks",
        "structured_output",
        "until_idle",
        "auto_resume_suspended_tools",
    }
)


def is_dynamic(value: Any) -> bool:
    """A function of the request context (not a class, a model, a tool, a memory or a plain value)."""
    return callable(value) and not isinstance(value, type) and not hasattr(value, "do_stream")


def dynamic_fields(agent_id: str, values: Mapping[str, Any]) -> dict[str, Callable[..., Any]]:
    """The given values that are functions (by field); the others stay as they are."""
    found = {name: value for name, value in values.items() if value is not None and is_dynamic(value)}
    for name, value in found.items():
        if not _accepts_context(value):
            raise TypeError(
                f"agent {agent_id!r}: {name} must be a value or a function of the request context "
                f"(def {name}(request_context): ...), got a callable that takes no argument"
            )
    return found


def _accepts_context(fn: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin: trust it
        return True
    takes = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_POSITIONAL,
        inspect.Parameter.VAR_KEYWORD,
    )
    return any(p.kind in takes or p.name == "request_context" for p in params)


async def _call(fn: Callable[..., Any], context: RequestContext) -> Any:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    named = any(p.name == "request_context" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    result = fn(request_context=context) if named else fn(context)
    return await result if inspect.isawaitable(result) else result


async def resolved_agent(
    agent: Agent, functions: Mapping[str, Callable[..., Any]], context: RequestContext
) -> Agent:
    """A copy of ``agent`` with each dynamic field replaced by its value for ``context``.

    The copy shares the agent's suspended-run bookkeeping, so a run it suspends is approved
    through the agent itself. A wrong value fails as the constructor would fail, naming the field.
    """
    view = copy.copy(agent)
    view._dynamic = {}
    for name, fn in functions.items():
        try:
            value = await _call(fn, context)
        except Exception as exc:
            raise type(exc)(f"agent {agent.id!r}: its dynamic {name} failed: {exc}") from exc
        view._set_field(name, value)
    return view


def check_dynamic_defaults(agent_id: str, options: Mapping[str, Any]) -> None:
    fixed = sorted(set(options) & OUTPUT_OPTIONS)
    if fixed:
        raise TypeError(
            f"agent {agent_id!r}: a dynamic default_options may not set {', '.join(fixed)} (they shape the "
            "output before the run starts): pass them to stream() or give the agent static default_options"
        )
