"""``model_settings``: the typed option, its normalisation, and the model call options it becomes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypedDict, cast

from ..models import CallOptions

__all__ = ["ModelSettings", "TimeoutSettings", "call_options", "normalize_model_settings"]


class TimeoutSettings(TypedDict, total=False):
    """``model_settings["timeout"]``: milliseconds for the whole run, one model call, its first part."""

    total_ms: float
    step_ms: float
    first_chunk_ms: float


class ModelSettings(TypedDict, total=False):
    """Mastra's ``modelSettings`` in snake_case (camelCase keys are accepted and normalised)."""

    temperature: float
    top_p: float
    top_k: int
    max_output_tokens: int
    stop_sequences: list[str]
    seed: int
    presence_penalty: float
    frequency_penalty: float
    headers: Mapping[str, str]
    provider_options: dict[str, dict[str, Any]]
    timeout: TimeoutSettings


_KEYS = frozenset(ModelSettings.__annotations__)
_TIMEOUT_KEYS = frozenset(TimeoutSettings.__annotations__)
_ALIASES = {"max_tokens": "max_output_tokens"}
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")
_CALL_KEYS = _KEYS - {"timeout"}


def _snake(key: str) -> str:
    return _CAMEL.sub(lambda m: "_" + m.group(1).lower(), key)


def _normalize(value: Any, known: frozenset[str], where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{where} must be a mapping, got {type(value).__name__}")
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = _ALIASES.get(_snake(str(key)), _snake(str(key)))
        if name not in known:
            raise TypeError(f"{where}: unknown key {key!r} (known: {', '.join(sorted(known))})")
        if name in out and out[name] != item:
            raise TypeError(f"{where}: {key!r} and {name!r} both given with different values")
        out[name] = item
    return out


def normalize_model_settings(value: Mapping[str, Any] | None) -> ModelSettings:
    """``value`` with Mastra's camelCase keys (``maxOutputTokens``, ``timeout.totalMs``) in snake_case.

    Unknown keys raise ``TypeError`` naming them and the known ones (they used to be ignored).
    """
    if value is None:
        return {}
    out = _normalize(value, _KEYS, "model_settings")
    if out.get("timeout") is not None:
        out["timeout"] = _normalize(out["timeout"], _TIMEOUT_KEYS, "model_settings.timeout")
    return cast(ModelSettings, out)


def call_options(settings: ModelSettings) -> CallOptions:
    """The settings that are model call options, under their ``CallOptions`` names (``None`` dropped)."""
    return cast(CallOptions, {k: v for k, v in settings.items() if k in _CALL_KEYS and v is not None})
