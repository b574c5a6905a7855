"""Load the conformance vectors recorded from the real Mastra / AI SDK packages (``tests/data/conformance``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
CONFORMANCE = DATA / "conformance"


def vector_files(kind: str) -> list[Path]:
    """Every vector of one kind (``smooth``, ``aisdk``, ``agent``, ``workflow``), sorted by name."""
    files = sorted((CONFORMANCE / kind).glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no conformance vectors under {CONFORMANCE / kind}: run make refresh-data")
    return files


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


class _Absent:
    pass


ABSENT = _Absent()


def to_wire(value: Any) -> Any:
    """Replace the vectors' tags by their wire form.

    ``{"$date": iso}`` → the ISO string, ``{"$bytes": b64}`` → the base64 string,
    ``{"$error": {...}}`` → ``{name, message, ...}``, ``{"$undefined": true}`` → key removed.
    """
    if isinstance(value, list):
        return [to_wire(v) for v in value if not _is_undefined(v)]
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, inner),) = value.items()
            if key in ("$date", "$bytes"):
                return inner
            if key == "$error":
                return to_wire(inner)
        return {k: to_wire(v) for k, v in value.items() if not _is_undefined(v)}
    return value


def _is_undefined(value: Any) -> bool:
    return isinstance(value, dict) and value.get("$undefined") is True and len(value) == 1


# Vectors recorded for features that are not built yet, by the issue that builds them. They run and
# are expected to fail (``xfail_strict``): when an issue lands, its vectors pass and the run fails
# until the entry is removed, so this table stays true.
NOT_BUILT: dict[str, dict[str, str]] = {
    "agent": {},
    "aisdk": {},
}


def params(kind: str, paths: list[Path], *, only: set[str] | None = None) -> list[Any]:
    """``pytest.param`` per vector, marked expected-to-fail (strict) where ``NOT_BUILT`` says so.

    ``only``: the vector names whose mark applies to this test (a vector may fail in one check and
    pass in another, e.g. its chunks differ while the client assembles the same message)."""
    import pytest

    out = []
    for path in paths:
        reason = NOT_BUILT.get(kind, {}).get(path.stem)
        marks = []
        if reason is not None and (only is None or path.stem in only):
            marks = [pytest.mark.xfail(reason=f"not built yet: {reason}", strict=True)]
        out.append(pytest.param(path, id=path.stem, marks=marks))
    return out
