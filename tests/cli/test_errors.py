"""Every mistake a user makes on the command line: one line ``agentstream <command>: ...``, exit 2/1."""

from __future__ import annotations

import json

import pytest

from ._support import agentstream, assert_one_line, clean_env

DELTA = json.dumps(
    {"type": "text-delta", "runId": "r", "from": "AGENT", "payload": {"id": "t", "text": "a b"}}
)


@pytest.mark.parametrize(
    ("args", "parts"),
    [
        (["run", ""], ["the prompt is empty"]),
        (["run", "   "], ["the prompt is empty"]),
        (["run", "hi", "--model", "nonsense"], ["--model", "'nonsense' names no provider", "openai", "demo"]),
        (
            ["run", "hi", "--model", "nope/x"],
            ["unknown model provider 'nope'", "known providers:", "anthropic"],
        ),
        (["run", "hi", "--model", "openai/"], ["names no model id"]),
        (["run", "hi", "--delay-ms", "-1"], ["--delay-ms", ">= 0", "'-1'", "--help"]),
        (["run", "hi", "--delay-ms", "soon"], ["--delay-ms", "'soon'"]),
        (["run", "hi", "--delay-ms", "nan"], ["--delay-ms", "finite"]),
        (["run", "hi", "--max-idle-ms", "-5"], ["--max-idle-ms"]),
        (["run"], ["required: prompt"]),
        (["run", "hi", "--smooth", "sentence"], ["--smooth", "invalid choice"]),
        (["serve", "--heartbeat-ms", "-1"], ["--heartbeat-ms", ">= 0"]),
        (["serve", "--heartbeat-ms", "often"], ["--heartbeat-ms", "'often'"]),
        (["serve", "--delay-ms", "-3"], ["--delay-ms"]),
        (["serve", "--port", "70000"], ["--port", "65535"]),
        (["serve", "--app", "nocolon"], ["'module:attr'"]),
        (
            ["serve", "--app", "no_such_module_xyz:app"],
            ["no module named 'no_such_module_xyz'", "PYTHONPATH"],
        ),
        (["serve", "--app", "json:nope"], ["no attribute 'nope'"]),
        (["serve", "--app", "json:__doc__"], ["expected a Mastra, an Agent, an ASGI app"]),
        (["serve", "--agent", "nobody"], ["--agent 'nobody' is not registered", "demo"]),
        (["smooth", "--delay-ms", "-1"], ["--delay-ms", ">= 0"]),
        (["smooth", "--delay-ms", "soon"], ["--delay-ms", "'none'"]),
        (["smooth", "--max-lag-ms", "-2"], ["--max-lag-ms"]),
        (["smooth", "--max-lag-ms", "x"], ["--max-lag-ms", "'x'"]),
        (["smooth", "--chunking", "sentence"], ["'sentence' is not a chunking", "regex:PATTERN"]),
        (["smooth", "--chunking", "regex:"], ["needs a pattern after 'regex:'"]),
        (
            ["smooth", "--chunking", "regex:["],
            ["Invalid regular expression: /[/: Unterminated character class"],
        ),
        (["smooth", "--chunking", "regex:("], ["Invalid regular expression: /(/"]),
        (["smooth", "--chunking", "regex:/a/q"], ["unknown flag 'q'"]),
        (["smooth", "--chunking", "regex:/a/gig"], ["flag 'g' given twice"]),
        (["smooth", "--chunking", "regex:a*"], ["matches the empty string"]),
        (["smooth", "--chunking", "segmenter:en:paragraph"], ["granularity"]),
        (["to-ui", "--version", "v9"], ["--version", "invalid choice"]),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_2(args: list[str], parts: list[str]) -> None:
    assert_one_line(agentstream(*args), args[0], 2, *parts)


def test_no_command_and_unknown_command() -> None:
    proc = agentstream()
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        "agentstream: the following arguments are required: COMMAND (see 'agentstream --help')"
    ]
    proc = agentstream("bogus")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "'bogus'" in proc.stderr


def test_version() -> None:
    from agentstream import __version__

    proc = agentstream("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"agentstream {__version__}"


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("openai/gpt-4o-mini", "OPENAI_API_KEY"),
        ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("google/gemini-2.5-flash", "GOOGLE_GENERATIVE_AI_API_KEY"),
        ("cohere/command-a-03-2025", "COHERE_API_KEY"),
        ("bedrock-mantle/openai.gpt-oss-120b", "AWS_BEARER_TOKEN_BEDROCK"),
    ],
)
def test_missing_api_key_is_one_line_and_exit_1(model: str, variable: str) -> None:
    line = assert_one_line(
        agentstream("run", "hi", "--model", model), "run", 1, variable, "API key is missing"
    )
    # the same through the environment variable
    proc = agentstream("run", "hi", env=clean_env(AGENTSTREAM_MODEL=model))
    assert assert_one_line(proc, "run", 1, variable) == line


def test_unknown_provider_from_the_environment_names_it() -> None:
    proc = agentstream("run", "hi", env=clean_env(AGENTSTREAM_MODEL="nope/x"))
    assert_one_line(proc, "run", 2, "AGENTSTREAM_MODEL", "unknown model provider 'nope'")


def test_serve_stops_at_start_when_an_agent_cannot_use_its_model() -> None:
    proc = agentstream("serve", "--port", "0", env=clean_env(AGENTSTREAM_MODEL="openai/gpt-4o-mini"))
    assert_one_line(proc, "serve", 1, "agent 'demo' cannot use its model", "OPENAI_API_KEY")


@pytest.mark.parametrize(
    ("hidden", "args", "extra"),
    [
        ("uvicorn", ["serve"], "server"),
        ("starlette", ["serve"], "server"),
        ("icu4py", ["smooth", "--chunking", "segmenter:ja"], "icu"),
    ],
)
def test_a_missing_extra_names_the_extra_to_install(hidden: str, args: list[str], extra: str) -> None:
    prelude = f"import sys; sys.modules[{hidden!r}] = None  # as if not installed"
    proc = agentstream(*args, prelude=prelude)
    assert_one_line(proc, args[0], 1, f"'{extra}' extra", f"pip install 'agentstream[{extra}]'", hidden)


def test_debug_shows_the_traceback_too() -> None:
    proc = agentstream("run", "hi", "--model", "nonsense", env=clean_env(AGENTSTREAM_DEBUG="1"))
    assert proc.returncode == 2
    assert "Traceback (most recent call last)" in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("agentstream run: --model: ")


def test_bad_input_lines_are_one_line_and_exit_1() -> None:
    proc = agentstream("smooth", "--delay-ms", "none", stdin=f"{DELTA}\n{{bad\n")
    assert_one_line(proc, "smooth", 1, "line 2")
    proc = agentstream("to-ui", stdin=f"{DELTA}\n[1]\n")
    assert_one_line(proc, "to-ui", 1, "line 2")


def test_a_connection_error_names_the_url() -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    env = clean_env(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=url)
    for extra in ([], ["--jsonl"]):
        proc = agentstream("run", "hi", "--model", "openai/gpt-4o-mini", *extra, env=env)
        assert_one_line(proc, "run", 1, "the run failed", "cannot connect", f"{url}/chat/completions")
