from __future__ import annotations

import pytest

from agentstream.agent._structured import StructuredOutputConfig
from agentstream.tools import SchemaDefinitionError


def test_a_structured_output_schema_that_cannot_be_enforced_is_refused_when_configured() -> None:
    with pytest.raises(SchemaDefinitionError, match=r"'nullable'.*/properties/age/nullable"):
        StructuredOutputConfig.from_option(
            {"schema": {"type": "object", "properties": {"age": {"type": "number", "nullable": True}}}}
        )
    assert StructuredOutputConfig.from_option({"type": "object"}).json_schema == {"type": "object"}
