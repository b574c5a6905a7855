"""Provider-part helpers: usage and finish-reason normalisation, tool-call input parsing and repair.

Ports of ``normalizeUsage``, ``normalizeFinishReason``, ``sanitizeToolCallInput`` and ``tryRepairJson``
(``stream/aisdk/v5/transform.ts``), spec §1.5.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jiter

__all__ = [
    "normalize_finish_reason",
    "normalize_usage",
    "parse_streamed_args",
    "parse_tool_input",
    "try_parse_streamed_args",
]

_CONTROL_TOKENS = re.compile(r"<\|[^|]*\|>\s*")
_SINGLE_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
_UNQUOTED_KEY = re.compile(r"([{,]\s*)([A-Za-z_$][\w$]*)(\s*:)")
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_ISO_DATE = re.compile(r"(:\s*)(\d{4}-\d{2}-\d{2}(?:T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?)(\s*[,}\]])")


def normalize_finish_reason(reason: Any) -> tuple[str, str | None]:
    """``(reason, raw_reason)``: unwrap V3 ``{unified, raw}`` envelopes; falsy or ``unknown`` → ``other``."""
    raw: str | None = None
    while isinstance(reason, dict):
        if isinstance(reason.get("raw"), str):
            raw = reason["raw"]
        reason = reason.get("unified")
    if not reason or reason == "unknown":
        return "other", raw
    return str(reason), raw


def normalize_usage(usage: Any, provider_metadata: Any = None) -> dict[str, Any]:
    """Mastra's ``LanguageModelUsage`` from a V2 (flat) or V3 (nested) provider usage; ``raw`` = the input."""
    if not isinstance(usage, dict):
        return {}
    out: dict[str, Any] = {}
    inp = usage.get("inputTokens")
    outp = usage.get("outputTokens")
    if isinstance(inp, dict) or isinstance(outp, dict):  # V3 nested shape
        i = inp if isinstance(inp, dict) else {}
        o = outp if isinstance(outp, dict) else {}
        fields = {
            "inputTokens": i.get("total"),
            "outputTokens": o.get("total"),
            "totalTokens": (i.get("total") or 0) + (o.get("total") or 0),
            "reasoningTokens": o.get("reasoning"),
            "cachedInputTokens": i.get("cacheRead"),
            "cacheCreationInputTokens": i.get("cacheWrite"),
        }
        out = {k: v for k, v in fields.items() if v is not None}
    else:
        if inp is not None:
            out["inputTokens"] = inp
        if outp is not None:
            out["outputTokens"] = outp
        total = usage.get("totalTokens")
        if total is None and (inp is not None or outp is not None):
            total = (inp or 0) + (outp or 0)
        if total is not None:
            out["totalTokens"] = total
        for key in ("reasoningTokens", "cachedInputTokens", "cacheCreationInputTokens"):
            if usage.get(key) is not None:
                out[key] = usage[key]
    anthropic = provider_metadata.get("anthropic") if isinstance(provider_metadata, dict) else None
    creation = anthropic.get("cacheCreation") if isinstance(anthropic, dict) else None
    if isinstance(creation, dict):
        for suffix in ("5m", "1h"):
            value = creation.get(
                f"ephemeral_{suffix}_input_tokens", creation.get(f"ephemeral{suffix}InputTokens")
            )
            if value is not None:
                out[f"cacheCreationInputTokens{suffix}"] = value
    out["raw"] = usage
    return out


def _loads(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except (ValueError, TypeError):
        return False, None


def repair_json(text: str) -> tuple[bool, Any]:
    """``tryRepairJson``: single quotes, unquoted keys, trailing commas, unquoted ISO dates, missing quote."""
    fixed = _SINGLE_QUOTED.sub(lambda m: '"' + m.group(1).replace('"', '\\"') + '"', text)
    fixed = _UNQUOTED_KEY.sub(r'\1"\2"\3', fixed)
    fixed = _TRAILING_COMMA.sub(r"\1", fixed)
    fixed = _ISO_DATE.sub(r'\1"\2"\3', fixed)
    ok, value = _loads(fixed)
    if ok:
        return ok, value
    if fixed.count('"') % 2 == 1:
        ok, value = _loads(fixed + '"')
        if not ok:
            ok, value = _loads(fixed.rstrip() + '"}')
    return ok, value


def parse_tool_input(text: Any) -> tuple[bool, Any]:
    """Args of a provider ``tool-call``: JSON.parse of the sanitized input, else the repaired JSON."""
    if not isinstance(text, str):
        return text is not None, text
    ok, value = _loads(text)
    if ok:
        return ok, value
    sanitized = _CONTROL_TOKENS.sub("", text).strip()
    ok, value = _loads(sanitized)
    if ok:
        return ok, value
    return repair_json(sanitized)


def parse_streamed_args(text: str) -> Any:
    """Args of the synthetic tool-call built from streamed deltas: ``JSON.parse`` or ``{}``."""
    return try_parse_streamed_args(text)[1]


def try_parse_streamed_args(text: str) -> tuple[bool, Any]:
    """``(True, value)`` if the streamed JSON parses (empty text is ``{}``), else ``(False, {})``."""
    if not text:
        return True, {}
    ok, value = _loads(text)
    return (True, value) if ok else (False, {})


def parse_partial_json(text: str) -> tuple[bool, Any]:
    """Best-effort parse of a JSON prefix (structured output streaming)."""
    if not text.strip():
        return False, None
    try:
        return True, jiter.from_json(text.encode(), partial_mode="trailing-strings")
    except ValueError:
        ok, value = repair_json(text)
        return ok, value
