"""What a checkpointed step records: JSON that decodes to what the loop saw."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from agentstream._abort import AbortError
from agentstream.agent import Tripwire
from agentstream.chunks import error_to_dict
from agentstream.durable._record import ReplayedError, decode, decode_error, encode, encode_error
from agentstream.models import APICallError
from agentstream.tools import ToolSuspended


def _through_json(value: Any) -> Any:
    return decode(json.loads(json.dumps(encode(value))))


def test_parts_with_dates_bytes_and_tag_lookalikes_come_back_equal() -> None:
    part = {
        "type": "response-metadata",
        "id": "r1",
        "timestamp": datetime(2024, 5, 1, 10, 0, tzinfo=UTC),
        "providerMetadata": {"x": {"$date": "not a date, the provider's own key"}},
        "file": b"\x00\x01binary",
        "list": [1, {"$bytes": "also the provider's"}],
    }
    assert _through_json(part) == part


def test_a_provider_error_comes_back_as_an_api_call_error_with_its_fields() -> None:
    error = APICallError(
        "rate limited",
        url="https://api.example/v1/chat",
        provider="example",
        status_code=429,
        response_body='{"error": "slow down"}',
        response_headers={"retry-after": "2"},
        data={"code": "rate"},
    )
    back = _through_json({"type": "error", "error": error})["error"]
    assert isinstance(back, APICallError)
    assert (back.status_code, back.is_retryable, back.response_headers) == (429, True, {"retry-after": "2"})
    assert str(back) == str(error) and error_to_dict(back) == error_to_dict(error)


@pytest.mark.parametrize(
    "error",
    [
        ToolSuspended({"ask": "ship?"}),
        Tripwire("blocked", retry=True, metadata={"why": 1}, processor_id="p"),
        AbortError("stop"),
        ValueError("bad value"),
        TimeoutError("too slow"),
    ],
)
def test_the_errors_the_loop_tells_apart_keep_their_type(error: Exception) -> None:
    back = decode_error(json.loads(json.dumps(encode_error(error))))
    assert type(back) is type(error)
    assert str(back) == str(error)
    for name in ("payload", "reason", "retry", "metadata", "processor_id"):
        assert getattr(back, name, None) == getattr(error, name, None)


def test_any_other_error_keeps_its_type_name_and_wire_form() -> None:
    class QuotaError(Exception):
        def __init__(self, message: str, *, quota: int) -> None:
            super().__init__(message)
            self.details = {"quota": quota}

    error = QuotaError("over quota", quota=3)
    back = decode_error(json.loads(json.dumps(encode_error(error))))
    assert isinstance(back, ReplayedError)
    assert type(back).__name__ == "QuotaError"
    assert (
        error_to_dict(back)
        == error_to_dict(error)
        == {"name": "QuotaError", "message": "over quota", "quota": 3}
    )
