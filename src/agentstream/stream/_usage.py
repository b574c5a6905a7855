"""`Usage`: token counts of a step or a run, snake_case in Python, Mastra's ``LanguageModelUsage`` on the wire.

A plain slotted class rather than a dataclass or a msgspec struct: msgspec would encode a dataclass
by its snake_case field names and lets a struct neither compare with a dict nor spell
``cacheCreationInputTokens5m``; here the JSON goes through `to_wire` only (the chunk encoder calls
it too), so the wire stays byte for byte what Mastra sends.

Dict access (``usage["inputTokens"]``, ``.get``, ``in``, ``==`` a dict) still works for one release
and warns with `DeprecationWarning` (docs/decisions/issue-21-typed-results.md).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = ["Usage"]

_UNSET: Final[Any] = object()

_FIELDS: Final = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("total_tokens", "totalTokens"),
    ("reasoning_tokens", "reasoningTokens"),
    ("cached_input_tokens", "cachedInputTokens"),
    ("cache_creation_input_tokens", "cacheCreationInputTokens"),
    ("cache_creation_input_tokens_5m", "cacheCreationInputTokens5m"),
    ("cache_creation_input_tokens_1h", "cacheCreationInputTokens1h"),
)
_NAME_OF: Final = {wire: name for name, wire in _FIELDS}


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _deprecated(what: str) -> None:
    warnings.warn(
        f"Usage {what} is deprecated and goes in the next release: read the attributes "
        "(usage.input_tokens, usage.output_tokens, ...) or usage.to_wire() for Mastra's JSON",
        DeprecationWarning,
        stacklevel=3,
    )


class Usage:
    """Token usage. Counts a provider did not report are ``None`` (absent on the wire).

    ``raw`` is the provider's own usage object when the model passed it on; ``extra`` keeps wire
    keys this class does not name (``inputTokenDetails``, ...) so that `to_wire` is lossless.
    ``usage + step`` adds a step's counts (each only where the step has it; ``raw`` is the later one).
    """

    __slots__ = (*(name for name, _ in _FIELDS), "_raw", "extra")

    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    reasoning_tokens: int | None
    cached_input_tokens: int | None
    cache_creation_input_tokens: int | None
    cache_creation_input_tokens_5m: int | None
    cache_creation_input_tokens_1h: int | None
    extra: Mapping[str, Any]
    _raw: Any

    def __init__(
        self,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        total_tokens: int | None = None,
        reasoning_tokens: int | None = None,
        cached_input_tokens: int | None = None,
        cache_creation_input_tokens: int | None = None,
        cache_creation_input_tokens_5m: int | None = None,
        cache_creation_input_tokens_1h: int | None = None,
        raw: Any = _UNSET,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        values = (
            input_tokens,
            output_tokens,
            total_tokens,
            reasoning_tokens,
            cached_input_tokens,
            cache_creation_input_tokens,
            cache_creation_input_tokens_5m,
            cache_creation_input_tokens_1h,
        )
        for (name, _), value in zip(_FIELDS, values, strict=True):
            if value is not None and not _count(value):
                raise TypeError(f"Usage.{name} must be an int or None, got {type(value).__name__}")
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_raw", raw)
        object.__setattr__(self, "extra", dict(extra) if extra else {})

    @classmethod
    def _trusted(cls, counts: Mapping[str, int | None], raw: Any, extra: Mapping[str, Any]) -> Usage:
        """Without the checks of ``__init__``: for counts this module has checked already."""
        usage = object.__new__(cls)
        setattr_ = object.__setattr__
        for name, _ in _FIELDS:
            setattr_(usage, name, counts.get(name))
        setattr_(usage, "_raw", raw)
        setattr_(usage, "extra", extra)
        return usage

    @property
    def raw(self) -> Any:
        """The provider's usage as it sent it, or ``None`` when there is none."""
        return None if self._raw is _UNSET else self._raw

    @property
    def has_raw(self) -> bool:
        """Whether ``raw`` is on the wire (a provider may send ``raw: null``)."""
        return self._raw is not _UNSET

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Usage is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Usage is immutable: cannot delete {name!r}")

    # ------------------------------------------------------------------ the wire

    @classmethod
    def from_wire(cls, data: Mapping[str, Any] | None) -> Usage:
        """From Mastra's JSON (camelCase keys). Non-integer counts are kept in ``extra`` as they came."""
        if not data:
            return _EMPTY
        counts: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        raw: Any = _UNSET
        for key, value in data.items():
            name = _NAME_OF.get(key)
            if name is not None and (value is None or _count(value)):
                if value is not None:
                    counts[name] = value
            elif key == "raw":
                raw = value
            else:
                extra[key] = value
        return cls._trusted(counts, raw, extra)

    def to_wire(self) -> dict[str, Any]:
        """Mastra's JSON: camelCase keys, unknown counts absent, ``raw`` last."""
        out: dict[str, Any] = {}
        for name, wire in _FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[wire] = value
        out.update(self.extra)
        if self._raw is not _UNSET:
            out["raw"] = self._raw
        return out

    # ------------------------------------------------------------------ arithmetic

    def __add__(self, other: object) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        if not other:
            return self
        counts: dict[str, int | None] = {}
        for name, _ in _FIELDS:
            mine, theirs = getattr(self, name), getattr(other, name)
            counts[name] = mine if theirs is None else (mine or 0) + theirs
        raw = other._raw if other._raw is not _UNSET else self._raw
        return Usage._trusted(counts, raw, self.extra)

    def with_total(self) -> Usage:
        """Mastra's ``totalUsage``: ``total_tokens`` = input + output + reasoning when it is unknown."""
        if self.total_tokens is not None:
            return self
        total = (self.input_tokens or 0) + (self.output_tokens or 0) + (self.reasoning_tokens or 0)
        return self._replace(total_tokens=total)

    def _replace(self, **changes: Any) -> Usage:
        fields: dict[str, Any] = {name: getattr(self, name) for name, _ in _FIELDS}
        fields.update(changes)
        return Usage(**fields, raw=self._raw, extra=self.extra)

    def __bool__(self) -> bool:
        return any(getattr(self, n) is not None for n, _ in _FIELDS) or self.has_raw or bool(self.extra)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Usage):
            return self.to_wire() == other.to_wire()
        if isinstance(other, Mapping):
            _deprecated("== dict")
            return self.to_wire() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # holds ``raw``, any JSON: as unhashable as a dict

    def __repr__(self) -> str:
        parts = [f"{name}={getattr(self, name)!r}" for name, _ in _FIELDS if getattr(self, name) is not None]
        if self._raw is not _UNSET:
            parts.append(f"raw={self._raw!r}")
        if self.extra:
            parts.append(f"extra={self.extra!r}")
        return f"Usage({', '.join(parts)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Usage.from_wire, (self.to_wire(),))

    # ------------------------------------------------------------------ deprecated dict access

    def __getitem__(self, key: str) -> Any:
        _deprecated(f"[{key!r}]")
        return self.to_wire()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Deprecated: ``usage.get("inputTokens")``; read ``usage.input_tokens``."""
        _deprecated(f".get({key!r})")
        return self.to_wire().get(key, default)

    def __contains__(self, key: object) -> bool:
        _deprecated(f"{key!r} in usage")
        return key in self.to_wire()

    def keys(self) -> Any:
        """Deprecated: the wire keys; use `to_wire`."""
        _deprecated(".keys()")
        return self.to_wire().keys()

    def items(self) -> Any:
        """Deprecated: the wire items; use `to_wire`."""
        _deprecated(".items()")
        return self.to_wire().items()

    def values(self) -> Any:
        """Deprecated: the wire values; use `to_wire`."""
        _deprecated(".values()")
        return self.to_wire().values()

    def __iter__(self) -> Iterator[str]:
        _deprecated("iteration")
        return iter(self.to_wire())

    def __len__(self) -> int:
        _deprecated("len()")
        return len(self.to_wire())


_EMPTY: Final = Usage()
