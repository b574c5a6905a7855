"""Load the conformance vectors recorded from the real Mastra / AI SDK packages (``../shared/conformance``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("AGENTSTREAM_SHARED", Path(__file__).resolve().parents[2] / "shared"))
CONFORMANCE = ROOT / "conformance"


def vector_files(kind: str) -> list[Path]:
    """Every vector of one kind (``smooth``, ``aisdk``, ``agent``, ``workflow``), sorted by name."""
    files = sorted((CONFORMANCE / kind).glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no conformance vectors under {CONFORMANCE / kind}: set AGENTSTREAM_SHARED")
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
