"""`Usage`: snake_case attributes in Python, exactly the recorded camelCase JSON on the wire."""

from __future__ import annotations

import json
import pickle
import warnings
from typing import Any

import msgspec
import pytest

from agentstream.chunks import to_jsonable
from agentstream.stream import Usage, add_usage, total_usage
from agentstream.stream._results import final_usage
from tests.conformance import load, to_wire, vector_files


def _recorded_usages() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in ("usage", "totalUsage") and isinstance(inner, dict):
                    found.append(inner)
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    for kind in ("agent", "workflow", "aisdk"):
        for path in vector_files(kind):
            walk(to_wire(load(path)))
    return found


RECORDED = _recorded_usages()


def test_the_vectors_hold_every_kind_of_usage() -> None:
    keys = {key for usage in RECORDED for key in usage}
    assert {
        "inputTokens",
        "outputTokens",
        "totalTokens",
        "reasoningTokens",
        "cachedInputTokens",
        "raw",
    } <= keys
    assert keys - {"inputTokens", "outputTokens", "totalTokens", "raw"}  # and keys Usage does not name


def test_every_recorded_usage_round_trips_to_the_same_json() -> None:
    for usage in RECORDED:
        typed = Usage.from_wire(usage)
        assert typed.to_wire() == usage
        assert json.loads(msgspec.json.encode(to_jsonable(typed))) == usage


def test_attributes_are_the_snake_case_counts() -> None:
    usage = Usage.from_wire(
        {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7, "cachedInputTokens": 1, "raw": {"p": 1}}
    )
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (5, 2, 7)
    assert usage.cached_input_tokens == 1 and usage.reasoning_tokens is None
    assert usage.raw == {"p": 1} and usage.has_raw
    assert (
        repr(usage)
        == "Usage(input_tokens=5, output_tokens=2, total_tokens=7, cached_input_tokens=1, raw={'p': 1})"
    )


def test_the_cache_creation_splits_keep_their_wire_names() -> None:
    usage = Usage(cache_creation_input_tokens_5m=3, cache_creation_input_tokens_1h=4)
    assert usage.to_wire() == {"cacheCreationInputTokens5m": 3, "cacheCreationInputTokens1h": 4}


def test_adding_counts_each_field_only_where_the_step_has_it() -> None:
    total = Usage(input_tokens=2, raw={"a": 1})
    step = Usage(input_tokens=3, output_tokens=4, raw={"b": 2})
    assert (total + step).to_wire() == {"inputTokens": 5, "outputTokens": 4, "raw": {"b": 2}}
    assert (step + Usage()) is step
    assert add_usage(Usage(), {"inputTokens": 1}) == Usage(input_tokens=1)
    assert total_usage(Usage(input_tokens=1, output_tokens=2)).total_tokens == 3
    assert final_usage(Usage(reasoning_tokens=1)) == {
        "inputTokens": 0,
        "outputTokens": 0,
        "totalTokens": 0,
        "reasoningTokens": 1,
    }


def test_usage_is_immutable_and_rejects_a_count_that_is_not_an_int() -> None:
    usage = Usage(input_tokens=1)
    with pytest.raises(AttributeError, match="immutable"):
        usage.input_tokens = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match=r"Usage\.output_tokens must be an int or None, got str"):
        Usage(output_tokens="3")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="output_tokens"):
        Usage(output_tokens=True)


def test_a_non_integer_count_on_the_wire_is_kept_as_it_came() -> None:
    usage = Usage.from_wire({"inputTokens": 1.5, "outputTokens": None})
    assert usage.input_tokens is None and usage.to_wire() == {"inputTokens": 1.5}


def test_pickling_keeps_the_usage() -> None:
    usage = Usage(input_tokens=1, raw=None)
    assert pickle.loads(pickle.dumps(usage)) == usage


@pytest.mark.parametrize(
    ("use", "expected"),
    [
        (lambda u: u["inputTokens"], 5),
        (lambda u: u.get("outputTokens", 0), 0),
        (lambda u: "inputTokens" in u, True),
        (lambda u: u == {"inputTokens": 5}, True),
        (lambda u: dict(u), {"inputTokens": 5}),
        (lambda u: list(u.items()), [("inputTokens", 5)]),
    ],
    ids=["getitem", "get", "in", "eq-dict", "dict()", "items"],
)
def test_dict_access_still_works_and_warns(use: Any, expected: Any) -> None:
    usage = Usage(input_tokens=5)
    with pytest.warns(DeprecationWarning, match=r"usage\.input_tokens"):
        assert use(usage) == expected


def test_attribute_access_and_comparing_usages_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        usage = Usage(input_tokens=5)
        assert usage == Usage(input_tokens=5) and usage.input_tokens == 5 and bool(usage)
        assert not Usage()
