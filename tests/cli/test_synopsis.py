"""The synopses in ``docs/cli.md`` and the README are the real parsers' (``_cli/_synopsis.py``)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from agentstream._cli._synopsis import synopsis
from agentstream.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
MARK = "<!-- synopsis: generated from the parsers by `python -m agentstream._cli._synopsis`"


def _block(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    assert MARK in text, f"{path.name} lost its generated synopsis"
    found = re.search(r"```text\n(.*?)```", text[text.index(MARK) :], flags=re.S)
    assert found, f"no text block after the synopsis marker in {path.name}"
    return found.group(1)


@pytest.mark.parametrize("name", ["docs/cli.md", "README.md"])
def test_the_documented_synopsis_is_the_parsers(name: str) -> None:
    assert _block(ROOT / name) == synopsis(), (
        f"{name}: regenerate the synopsis with `python -m agentstream._cli._synopsis`"
    )


def test_every_command_and_flag_is_in_the_synopsis() -> None:
    text = synopsis()
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, sub in commands.items():
        assert f"agentstream {name} " in text
        for action in sub._actions:
            for flag in action.option_strings:
                if (
                    flag.startswith("--")
                    and flag != "--help"
                    and not isinstance(action, argparse._SubParsersAction)
                ):
                    assert flag in text, (name, flag)
    for flag in (
        "--approve",
        "--decline",
        "--resume",
        "--stream-store",
        "--durable-db",
        "--no-smooth",
        "--app",
    ):
        assert flag in text
    assert "agentstream workflow run " in text and "agentstream workflow resume " in text
    assert "agentstream cluster " in text
    assert all(len(line) <= 100 for line in text.splitlines())
