"""Mastra's default ``onError`` text for Python errors and values."""

from __future__ import annotations

from typing import Any

import pytest

from agentstream import AbortError
from agentstream.ai_sdk import default_error_text
from agentstream.testing import ScriptedError


class MastraError(Exception):
    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.name = "MastraError"
        self.code = details.get("code")


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (ValueError("bad value"), "ValueError: bad value"),
        (ValueError(), "ValueError"),
        (ScriptedError("TypeError", "fetch failed"), "TypeError: fetch failed"),
        (
            ScriptedError("AI_APICallError", "500", {"statusCode": 500, "responseBody": "secret"}),
            '{"name":"AI_APICallError","statusCode":500}',
        ),
        (MastraError("x"), '{"name":"MastraError"}'),
        (MastraError("x", code="E1"), '{"name":"MastraError","code":"E1"}'),
        (AbortError(), "AbortError: This operation was aborted"),
        ("plain", "plain"),
        (42, "42"),
        (1.5, "1.5"),
        (2.0, "2"),
        (None, "null"),
        (True, "true"),
        ({}, "[object Object]"),
        ({"message": "m", "prompt": "hidden"}, '{"message":"m"}'),
        ([1, "a"], '[1,"a"]'),
    ],
)
def test_default_error_text(error: Any, text: str) -> None:
    assert default_error_text(error) == text
