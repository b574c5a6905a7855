"""The part handler table: each handler takes the TypedDict of the part type it is registered for."""

from __future__ import annotations

import typing

from agentstream.agent._parts import HANDLERS, convert_unknown
from agentstream.models import StreamPart

from ..models._typed_parts import PART_TYPES


def test_every_stream_part_type_has_a_handler() -> None:
    assert set(PART_TYPES) == set(HANDLERS)


def test_each_handler_takes_the_part_type_it_is_registered_for() -> None:
    for kind, handler in HANDLERS.items():
        part_type = typing.get_type_hints(handler)["part"]
        assert part_type is PART_TYPES[kind], (kind, handler.__name__, part_type)


def test_part_type_literals_are_the_union_members() -> None:
    members = typing.get_args(StreamPart)
    assert len(members) == len(PART_TYPES) == len(set(members))
    assert convert_unknown not in HANDLERS.values()
