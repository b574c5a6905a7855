"""What instrumentation is switched on: the global setting and the per-agent one.

Nothing here imports OpenTelemetry, so an uninstrumented program never loads it: deciding that a run
is not traced costs one function call per run (`settings_for`), nothing per chunk.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

__all__ = [
    "ACTIVE",
    "InstrumentationSettings",
    "active_settings",
    "check_instrument_option",
    "global_settings",
    "instrument",
    "settings_for",
]

_INSTALL_HINT = "pip install 'agentstream[otel]'"


@dataclass(frozen=True)
class InstrumentationSettings:
    """How runs are traced with OpenTelemetry.

    * ``tracer_provider`` — where spans go (``None``: OpenTelemetry's global provider, looked up when
      a span is made, so a provider installed later is used).
    * ``include_content`` — record prompts, model outputs, tool arguments and tool results on the
      spans (``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.tool.call.arguments``,
      ``gen_ai.tool.call.result``). Off by default: they may hold personal data.
    """

    tracer_provider: TracerProvider | None = None
    include_content: bool = False
    _tracer: list[Tracer] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            import opentelemetry.trace  # noqa: F401 - only checking it is there
        except ImportError as exc:
            raise ImportError(f"tracing needs the OpenTelemetry API: {_INSTALL_HINT}") from exc

    @property
    def tracer(self) -> Tracer:
        """The ``agentstream`` tracer of ``tracer_provider`` (or of the global provider)."""
        if not self._tracer:
            from opentelemetry import trace

            from .. import __version__

            provider = self.tracer_provider or trace.get_tracer_provider()
            self._tracer.append(provider.get_tracer("agentstream", __version__))
        return self._tracer[0]


_global: InstrumentationSettings | None = None


def instrument(
    tracer_provider: TracerProvider | None = None, *, include_content: bool = False, enabled: bool = True
) -> InstrumentationSettings | None:
    """Trace every agent run with OpenTelemetry (pydantic-ai's ``Agent.instrument_all``).

    Each run gets an ``invoke_agent`` span with a ``chat`` span per model call and an
    ``execute_tool`` span per tool call (GenAI semantic conventions); background tasks get a span
    whose parent is the tool call that dispatched them. Agents built with ``instrument=False`` stay
    untraced, ``instrument=InstrumentationSettings(...)`` uses its own settings. Needs the ``otel``
    extra (``opentelemetry-api``); spans are exported by whatever SDK the application configured.
    ``enabled=False`` switches the global instrumentation off again. Returns the settings in force.
    """
    global _global
    _global = InstrumentationSettings(tracer_provider, include_content) if enabled else None
    return _global


def global_settings() -> InstrumentationSettings | None:
    """The settings of `instrument` (``None``: not switched on globally)."""
    return _global


def settings_for(instrument: bool | InstrumentationSettings | None) -> InstrumentationSettings | None:
    """An agent's ``instrument=`` resolved: ``None`` follows `instrument` (or the traced run whose
    tool started this one), ``True`` uses those settings (or the defaults), ``False`` is off."""
    if instrument is None:
        return ACTIVE.get() or _global
    if instrument is False:
        return None
    if instrument is True:
        return ACTIVE.get() or _global or InstrumentationSettings()
    return instrument


def check_instrument_option(value: Any, where: str) -> bool | InstrumentationSettings | None:
    """``value`` if it is a valid ``instrument=`` (``None``, a bool, settings); a ``TypeError`` otherwise."""
    if value is None or isinstance(value, (bool, InstrumentationSettings)):
        return value
    raise TypeError(
        f"{where}: instrument must be True, False, None or an InstrumentationSettings, "
        f"got {type(value).__name__}"
    )


ACTIVE: ContextVar[InstrumentationSettings | None] = ContextVar("agentstream_tracing", default=None)
"""The settings of the traced run whose tool is executing here (set around each traced tool call), so
that what the tool starts (a background task, a nested agent run) is traced the same way."""


def active_settings() -> InstrumentationSettings | None:
    """The settings in force here: the running traced tool's, else the global ones (``None``: off)."""
    return ACTIVE.get() or _global
