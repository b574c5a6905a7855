"""``agentstream run --app MODULE:ATTR [--agent ID]``: a user's own agent (own tools, own names) with
every flag the demo takes, and no argparse abbreviations anywhere."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

import pytest

from agentstream.cli import build_parser

from ._support import agentstream, assert_one_line

BOOK = "book a table at Luigi for 4"

ORDERS = '''
from agentstream import Agent, Mastra, tool
from agentstream.memory import Memory
from agentstream.storage import SQLiteStore
from agentstream.tools import ToolContext

BOOKED = []


@tool(require_approval=True)
async def book_table(restaurant: str, people: int = 2) -> dict:
    """Book a table (my own tool)."""
    return {"restaurant": restaurant, "people": people, "confirmation": "ORD-1"}


@tool(resume_schema={"type": "object", "properties": {"time": {"type": "string"}}, "required": ["time"]})
async def choose_time(restaurant: str, context: ToolContext) -> dict:
    """Ask which time."""
    if context.resume_data is None:
        return await context.suspend({"question": f"When at {restaurant}?"})
    return {"restaurant": restaurant, "time": context.resume_data["time"], "by": "orders"}


agent = Agent(id="orders", name="Orders", instructions="Take orders.", model="demo",
              tools=[book_table, choose_time])
helper = Agent(id="helper", instructions="Help.", model="demo")
mastra = Mastra(agents={"orders": agent, "helper": helper})
remembering = Agent(id="remembering", instructions="x", model="demo",
                    memory=Memory(SQLiteStore("memory.db")))
'''


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    (tmp_path / "orders.py").write_text(textwrap.dedent(ORDERS), encoding="utf-8")
    return tmp_path


def _run(app_dir: Path, *args: str) -> tuple[int, str, str]:
    proc = agentstream("run", *args, "--delay-ms", "0", cwd=app_dir)
    return proc.returncode, proc.stdout, proc.stderr


def test_approve_and_decline_on_the_users_agent(app_dir: Path) -> None:
    code, out, err = _run(app_dir, "--app", "orders:agent", BOOK, "--approve")
    assert code == 0, err
    assert '← book_table: {"restaurant": "Luigi", "people": 4, "confirmation": "ORD-1"}' in out
    assert "note: using the offline demo model" not in err  # the user's agent has its own model
    code, out, err = _run(app_dir, "--app", "orders:agent", BOOK, "--decline", "too far")
    assert code == 0, err
    assert "← book_table: declined" in out and "ORD-1" not in out


def test_resume_and_agent_choice_on_a_mastra(app_dir: Path) -> None:
    code, out, err = _run(
        app_dir,
        "--app",
        "orders:mastra",
        "--agent",
        "orders",
        "pick a time at Luigi",
        "--resume",
        '{"time": "20:15"}',
    )
    assert code == 0, err
    assert '"time": "20:15", "by": "orders"' in out
    proc = agentstream("run", "--app", "orders:mastra", "hello", cwd=app_dir)
    assert_one_line(proc, "run", 2, "orders:mastra has 2 agents (helper, orders): pick one with --agent ID")
    proc = agentstream("run", "--app", "orders:mastra", "--agent", "nobody", "hello", cwd=app_dir)
    assert_one_line(
        proc, "run", 2, "--agent 'nobody' is not an agent of orders:mastra (agents: helper, orders)"
    )


def test_jsonl_until_idle_and_goal_on_the_users_agent(app_dir: Path) -> None:
    code, out, err = _run(app_dir, "--app", "orders:agent", BOOK, "--approve", "--jsonl")
    assert code == 0, err
    assert '"type":"tool-result"' in out and "ORD-1" in out
    code, out, err = _run(app_dir, "--app", "orders:agent", "hello there", "--until-idle")
    assert code == 0, err
    code, out, err = _run(app_dir, "--app", "orders:agent", "write a haiku", "--goal", "include a haiku")
    assert code == 0, err
    assert "judging attempt 1/5" in out


def test_thread_remembers_across_runs(app_dir: Path) -> None:
    code, _, err = _run(app_dir, "--app", "orders:remembering", "--thread", "t1", "my name is Ada")
    assert code == 0, err
    assert (app_dir / "memory.db").exists()
    proc = agentstream("run", "--app", "orders:remembering", "--thread", "t1", "hello", cwd=app_dir)
    assert proc.returncode == 0, proc.stderr
    proc = agentstream("run", "--thread", "t1", "hello", cwd=app_dir)
    assert_one_line(proc, "run", 2, "--thread applies to the agent of --app MODULE:ATTR; give --app too")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--app", "orders:agent", "--model", "openai/gpt-4o", "hi"], "--model sets the demo agent's model"),
        (["--agent", "orders", "hi"], "--agent applies to the agent of --app MODULE:ATTR; give --app too"),
        (["--app", "nosuch:agent", "hi"], "--app: no module named 'nosuch'"),
        (["--app", "orders:missing", "hi"], "--app: module 'orders' has no attribute 'missing'"),
    ],
)
def test_mistakes_are_one_line(app_dir: Path, args: list[str], message: str) -> None:
    assert_one_line(agentstream("run", *args, cwd=app_dir), "run", 2, message)


def test_app_is_never_read_as_approve(app_dir: Path) -> None:
    """The issue's command line: ``--app`` is its own flag, and no prefix stands for another one."""
    code, _, err = _run(app_dir, "--app", "orders:agent", "hello", "--approve")
    assert code == 0, err
    proc = agentstream("run", "--appro", "hello", cwd=app_dir)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        "agentstream: unrecognized arguments: --appro (see 'agentstream --help')"
    ]


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _parsers(sub)
    return found


def test_no_parser_accepts_abbreviations() -> None:
    parsers = _parsers(build_parser())
    assert len(parsers) >= 10  # agentstream, its 7 commands, workflow run / resume
    for parser in parsers:
        assert parser.allow_abbrev is False, parser.prog
