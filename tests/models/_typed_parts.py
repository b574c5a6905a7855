"""Check that parts a provider produced are what the ``StreamPart`` TypedDicts say they are."""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from agentstream.models import StreamPart

_ADAPTER: TypeAdapter[Any] = TypeAdapter(Annotated[StreamPart, Field(discriminator="type")])
PART_TYPES: dict[str, Any] = {
    typing.get_args(typing.get_type_hints(cls)["type"])[0]: cls for cls in typing.get_args(StreamPart)
}
"""Part type literal → its TypedDict."""


def assert_typed_parts(parts: Iterable[Mapping[str, Any]]) -> None:
    """Every part has its type's required keys, no key its type does not declare, and values of the declared types."""
    for part in parts:
        cls = PART_TYPES.get(part.get("type"))  # type: ignore[arg-type]
        assert cls is not None, f"unknown part type {part.get('type')!r}: {part!r}"
        missing = cls.__required_keys__ - part.keys()
        unknown = part.keys() - cls.__required_keys__ - cls.__optional_keys__
        assert not missing, f"{part['type']} part without {sorted(missing)}: {part!r}"
        assert not unknown, f"{part['type']} part with undeclared {sorted(unknown)}: {part!r}"
        _ADAPTER.validate_python(part, strict=True)
