"""Keeping configured secrets out of everything a client or a model can read.

Provider API keys are registered when a model is built; keys in the environment (``*_API_KEY``,
``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``) count too, so a tool that reads its own key is covered.
`redact` replaces every such value in any spelling it is likely to take in an error: raw,
JSON-escaped (also with ``\\/`` and escaped twice, as in a body quoted inside JSON) and URL-encoded.
Redaction always runs on the whole text, *before* anything is shortened: a key cut in half by a
length limit would no longer match.
"""

from __future__ import annotations

import json
import os
import re
import threading
import traceback
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "loggable",
    "redact",
    "redact_value",
    "register_secret",
    "safe_url",
    "shorten",
]

MASK = "***"
MIN_SECRET_LENGTH = 8
"""Shorter values (``"none"``, ``"ollama"``) are placeholders, and masking them would mangle text."""

_ENV_NAME = re.compile(r"(?:API_?KEY|_KEY|TOKEN|SECRET|PASSWORD|PASSWD)$", re.IGNORECASE)
_SECRET_QUERY = re.compile(r"key|token|secret|password|passwd|signature|sig|auth", re.IGNORECASE)

_lock = threading.Lock()
_registered: set[str] = set()
_cache: tuple[frozenset[str], re.Pattern[str] | None] = (frozenset(), None)


def register_secret(value: str | None) -> None:
    """Never show ``value`` to a client or a model (ignored when shorter than 8 characters)."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)


def _secrets() -> frozenset[str]:
    env = (v for k, v in os.environ.items() if _ENV_NAME.search(k) and len(v) >= MIN_SECRET_LENGTH)
    return frozenset(_registered).union(env)


def _spellings(secret: str) -> set[str]:
    json_forms = {json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    json_forms |= {f.replace("/", "\\/") for f in json_forms}
    forms = {secret, *json_forms}
    forms |= {json.dumps(f)[1:-1] for f in json_forms}  # a JSON body quoted inside another JSON string
    for encoded in (quote(secret, safe=""), quote(secret), quote_plus(secret)):
        forms |= {encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)}
    return forms


def _pattern(secrets: frozenset[str]) -> re.Pattern[str] | None:
    global _cache
    cached_for, pattern = _cache
    if cached_for == secrets:
        return pattern
    forms = {form for secret in secrets for form in _spellings(secret)}
    # Longest first, so a spelling that contains another is replaced whole.
    pattern = re.compile("|".join(map(re.escape, sorted(forms, key=len, reverse=True)))) if forms else None
    _cache = (secrets, pattern)
    return pattern


def redact(text: str, extra: Iterable[str | None] = ()) -> str:
    """``text`` with every configured secret (and each of ``extra``) replaced by ``***``."""
    secrets = _secrets()
    more = frozenset(s for s in extra if s and len(s) >= MIN_SECRET_LENGTH)
    pattern = _pattern(secrets | more)
    return text if pattern is None else pattern.sub(MASK, text)


def redact_value(value: Any, extra: Iterable[str | None] = ()) -> Any:
    """A JSON-like value (dicts, lists, strings) with `redact` applied to every string in it."""
    if isinstance(value, str):
        return redact(value, extra)
    if isinstance(value, dict):
        return {k: redact_value(v, extra) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v, extra) for v in value]
    return value


def shorten(text: str, limit: int, extra: Iterable[str | None] = ()) -> str:
    """Redact, *then* cut to ``limit`` characters (``…`` marks a cut)."""
    text = redact(text, extra)
    return text if len(text) <= limit else text[:limit] + "…"


def loggable(error: object) -> str:
    """A run error for the server log: the message, the upstream details a provider error carries
    (URL, status, response headers and body, which a client never sees) and the traceback or cause
    chain, all redacted."""
    if not isinstance(error, BaseException):
        return redact(repr(error))
    lines = ["".join(traceback.format_exception(error)).rstrip()]
    for label, attr in (("url", "url"), ("status", "status_code"), ("response headers", "response_headers")):
        value = getattr(error, attr, None)
        if value is not None:
            lines.append(f"{label}: {value}")
    body = getattr(error, "response_body", None)
    if isinstance(body, str) and body:
        lines.append(f"response body: {body}")
    return redact("\n".join(lines))


def safe_url(url: str, extra: Iterable[str | None] = ()) -> str:
    """``url`` without credentials: no user info, secret-looking query values masked, then redacted."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rpartition("@")[2]
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, MASK if _SECRET_QUERY.search(k) else v) for k, v in pairs], safe="*")
        url = urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        pass
    return redact(url, extra)
