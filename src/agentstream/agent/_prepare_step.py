"""``prepare_step``: a function called before every model call that may change that one call (Mastra's
``prepareStep``, which Mastra runs as a ``processInputStep`` processor).

It is called with keyword arguments (take what you need, then ``**_``), as Mastra's
``ProcessInputStepArgs`` in snake_case: ``step_number`` (0-based), ``steps`` (the finished steps'
`StepInfo`), ``messages`` (the prompt without its system messages), ``system_messages``, ``model``
(the agent's), ``tools`` (the run's, by name), ``tool_choice``, ``active_tools``,
``request_context`` and ``abort_signal``. It may be async. It returns ``None`` (no change) or a
mapping with any of:

* ``model`` — a model string or a `LanguageModel` for this call;
* ``tools`` — this step's tools (a list or a name → tool mapping) instead of the run's: they are
  offered to the model and they are what the step's calls run;
* ``active_tools`` — the names of the tools offered (and run) in this step;
* ``tool_choice`` — ``"auto"``, ``"none"``, ``"required"``, a tool name or ``{"type": "tool",
  "toolName": …}``;
* ``messages`` / ``system_messages`` — this call's prompt in place of the conversation / the
  system messages (this call only: the run's history is not rewritten);
* ``provider_options`` — merged into the call's provider options.

Nothing returned for a step means the agent's own settings: a switch lasts one step.

The hook is one layer of the run's chain (`PrepareStepHooks`, concern ``prepare_step``), inside the
processors layer so that it sees the messages the input-step processors made. The model switch goes
through `StepModel`, the run's model: tracing and checkpoints wrap it, so a switched call is traced
and checkpointed like any other.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._hooks import ChainedHooks, LoopHooks, StepInfo
from ._model_call import normalize_tool_choice

if TYPE_CHECKING:
    from .._abort import AbortSignal
    from .._request_context import RequestContext
    from ..models import CallOptions, LanguageModel, StreamPart
    from ..tools import Tool

__all__ = ["PREPARE_STEP_KEYS", "PrepareStepHooks", "StepModel", "check_prepare_step"]

PREPARE_STEP_KEYS = frozenset(
    {"model", "tools", "active_tools", "tool_choice", "messages", "system_messages", "provider_options"}
)


def check_prepare_step(value: Any) -> Callable[..., Any]:
    if not callable(value):
        raise TypeError(f"prepare_step must be a function of the step, got {type(value).__name__}")
    fn: Callable[..., Any] = value
    return fn


class _Answered:
    """A step model's stream, saying which model answered (`ModelStream.model`)."""

    __slots__ = ("_inner", "model")

    def __init__(self, inner: AsyncIterator[StreamPart], model: LanguageModel) -> None:
        self._inner = inner
        self.model = getattr(inner, "model", None) or model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)  # request, response, fallback_index …

    def __aiter__(self) -> _Answered:
        return self

    async def __anext__(self) -> StreamPart:
        return await self._inner.__anext__()

    async def aclose(self) -> None:
        aclose = getattr(self._inner, "aclose", None)
        if aclose is not None:
            await aclose()


class StepModel:
    """The run's model when it has a ``prepare_step``: the agent's model, or the step's choice."""

    def __init__(self, model: LanguageModel) -> None:
        self.default = model
        self.current = model
        self.specification_version = getattr(model, "specification_version", "v2")

    @property
    def provider(self) -> str:
        return self.current.provider

    @provider.setter
    def provider(self, value: str) -> None:
        self.current.provider = value

    @property
    def model_id(self) -> str:
        return self.current.model_id

    @model_id.setter
    def model_id(self, value: str) -> None:
        self.current.model_id = value

    def do_stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        model = self.current
        return _Answered(model.do_stream(options), model)


def _tool_map(value: Any) -> dict[str, Tool]:
    from ..tools import Tool

    items = (
        list(value.items()) if isinstance(value, Mapping) else [(getattr(t, "id", None), t) for t in value]
    )
    out: dict[str, Tool] = {}
    for name, tool in items:
        if not isinstance(tool, Tool) or not isinstance(name, str):
            raise TypeError(
                f"prepare_step tools: expected tools (a list or a name -> tool mapping), got {tool!r}"
            )
        out[name] = tool
    return out


def _system(messages: Sequence[Any]) -> list[dict[str, Any]]:
    return [m if isinstance(m, Mapping) else {"role": "system", "content": str(m)} for m in messages]  # type: ignore[misc]


class PrepareStepHooks(ChainedHooks):
    """Calls the run's ``prepare_step`` before each model call and applies what it returns."""

    def __init__(
        self,
        inner: LoopHooks,
        fn: Callable[..., Any],
        *,
        model: StepModel,
        tools: dict[str, Tool],
        request_context: RequestContext,
        signal: AbortSignal,
        tool_choice: Any = None,
        active_tools: list[str] | None = None,
    ) -> None:
        super().__init__(inner)
        self.fn = fn
        self.model = model
        self.tools = tools
        self.request_context = request_context
        self.signal = signal
        self.tool_choice = tool_choice
        self.active_tools = active_tools
        self.steps: list[StepInfo] = []
        self._step_tools: dict[int, dict[str, Tool]] = {}
        self._resolved: dict[str, LanguageModel] = {}

    async def _result(self, step_number: int, options: CallOptions) -> Mapping[str, Any]:
        prompt = list(options.get("prompt") or [])
        result = self.fn(
            step_number=step_number - 1,
            steps=list(self.steps),
            messages=[m for m in prompt if m.get("role") != "system"],
            system_messages=[m for m in prompt if m.get("role") == "system"],
            model=self.model.default,
            tools=dict(self.tools),
            tool_choice=self.tool_choice,
            active_tools=self.active_tools,
            request_context=self.request_context,
            abort_signal=self.signal,
        )
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            return {}
        if not isinstance(result, Mapping):
            raise TypeError(f"prepare_step must return None or a mapping, got {type(result).__name__}")
        unknown = set(result) - PREPARE_STEP_KEYS
        if unknown:
            raise TypeError(
                f"prepare_step returned unknown key(s) {', '.join(sorted(unknown))} "
                f"(known: {', '.join(sorted(PREPARE_STEP_KEYS))})"
            )
        return result

    def _model(self, value: Any) -> LanguageModel:
        if value is None:
            return self.model.default
        if isinstance(value, str):
            if value not in self._resolved:
                from ..models import resolve_model

                self._resolved[value] = resolve_model(value)
            return self._resolved[value]
        from ..models import LanguageModel

        if not isinstance(value, LanguageModel):
            raise TypeError(f"prepare_step model: expected a model string or a LanguageModel, got {value!r}")
        return value

    async def prepare_step(self, step_number: int, options: CallOptions) -> CallOptions:
        result = await self._result(step_number, options)
        self.model.current = self._model(result.get("model"))
        options = dict(options)  # type: ignore[assignment]
        tools = _tool_map(result["tools"]) if result.get("tools") is not None else None
        active = result.get("active_tools")
        if tools is not None or active is not None:
            step = tools if tools is not None else dict(self.tools)
            if active is not None:
                step = {k: v for k, v in step.items() if k in set(active)}
            self._step_tools[step_number] = step
            if step:
                options["tools"] = [t.definition() for t in step.values()]
                options.setdefault("tool_choice", {"type": "auto"})
            else:
                options.pop("tools", None)
                options.pop("tool_choice", None)
        if result.get("tool_choice") is not None:
            options["tool_choice"] = normalize_tool_choice(result["tool_choice"])
        prompt = list(options.get("prompt") or [])
        system = [m for m in prompt if m.get("role") == "system"]
        rest = [m for m in prompt if m.get("role") != "system"]
        if result.get("system_messages") is not None:
            system = _system(result["system_messages"])
        if result.get("messages") is not None:
            rest = list(result["messages"])
        if result.get("system_messages") is not None or result.get("messages") is not None:
            options["prompt"] = system + rest
        if result.get("provider_options"):
            merged = dict(options.get("provider_options") or {})
            for provider, values in result["provider_options"].items():
                merged[provider] = {**merged.get(provider, {}), **values}
            options["provider_options"] = merged
        return await self.inner.prepare_step(step_number, options)

    async def step_tools(self, step_number: int, tools: dict[str, Tool]) -> dict[str, Tool]:
        return await self.inner.step_tools(step_number, self._step_tools.pop(step_number, tools))

    async def after_model(self, step: StepInfo) -> None:
        self.steps.append(step)
        await self.inner.after_model(step)
