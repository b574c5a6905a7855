"""``model_settings``: snake_case keys reach the model call; Mastra's camelCase keys are normalised;
unknown keys are refused naming the known ones (they used to be ignored silently)."""

from __future__ import annotations

from typing import Any

import pytest

from agentstream.agent import Agent
from agentstream.agent._settings import call_options, normalize_model_settings
from agentstream.testing import ScriptedModel

STEP: list[dict[str, Any]] = [
    {"type": "stream-start", "warnings": []},
    {"type": "text-start", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": "ok"},
    {"type": "text-end", "id": "t"},
    {"type": "finish", "finishReason": "stop", "usage": {}},
]


def test_camel_case_keys_are_normalised() -> None:
    settings = normalize_model_settings(
        {"maxOutputTokens": 64, "topP": 0.5, "stopSequences": ["x"], "timeout": {"stepMs": 10}}
    )
    assert settings == {
        "max_output_tokens": 64,
        "top_p": 0.5,
        "stop_sequences": ["x"],
        "timeout": {"step_ms": 10},
    }
    assert normalize_model_settings({"max_tokens": 5}) == {"max_output_tokens": 5}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"maxOutputToken": 1}, "model_settings: unknown key 'maxOutputToken' (known: frequency_penalty"),
        ({"timeout": {"stepMS": 1}}, "model_settings.timeout: unknown key 'stepMS' (known: first_chunk_ms"),
        ({"topP": 0.1, "top_p": 0.2}, "model_settings: 'top_p' and 'top_p' both given with different values"),
        ("fast", "model_settings must be a mapping, got str"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(value: Any, message: str) -> None:
    with pytest.raises(TypeError) as info:
        normalize_model_settings(value)
    assert str(info.value).startswith(message)


def test_call_options_drop_the_timeout_and_unset_values() -> None:
    settings: Any = {"temperature": 0.2, "seed": None, "timeout": {"total_ms": 5}}
    assert call_options(settings) == {"temperature": 0.2}


async def test_settings_reach_the_model_call() -> None:
    model = ScriptedModel([STEP])
    out = Agent(id="a", model=model).stream("hi", model_settings={"temperature": 0.3, "maxOutputTokens": 9})  # type: ignore[typeddict-unknown-key]
    assert await out.text == "ok"
    assert model.calls[0].options["temperature"] == 0.3
    assert model.calls[0].options["max_output_tokens"] == 9


def test_an_unknown_stream_option_names_the_known_ones() -> None:
    agent = Agent(id="a", model=ScriptedModel([STEP]))
    with pytest.raises(TypeError, match=r"unknown agent option\(s\): max_step \(known: .*max_steps"):
        agent.stream("hi", max_step=2)  # type: ignore[call-arg]
