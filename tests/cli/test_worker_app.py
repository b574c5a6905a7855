"""``agentstream worker --app``: ``--database-url`` reaches an app that reads ``$AGENTSTREAM_DURABLE_DB``,
and an app whose background tools no worker will run says so (instead of tasks waiting forever)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from ._support import agentstream, clean_env

REDIS = "redis://127.0.0.1:56379/0"  # the shared test Redis: only connected to, never written
NO_DATABASE = "postgresql://postgres@127.0.0.1:1/nothing"  # launching fails at once, after the checks

APP = '''
import os
from agentstream import Agent, Mastra, tool

@tool(background={"enabled": True})
async def research(topic: str) -> dict:
    """Research a topic."""
    return {"topic": topic}

def mastra() -> Mastra:
    print("app sees", os.environ["AGENTSTREAM_DURABLE_DB"])
    return Mastra(agents={"a": Agent(id="a", model="offline", tools=[research])},
                  background_tasks={"enabled": True})

tools = {"research": research}
'''


def _redis_or_skip() -> None:
    try:
        socket.create_connection(("127.0.0.1", 56379), timeout=1).close()
    except OSError:
        if os.environ.get("CI"):
            pytest.fail("Redis is not running on 127.0.0.1:56379 (scripts/redis.sh)")
        pytest.skip("Redis is not running on 127.0.0.1:56379 (scripts/redis.sh)")


def _worker(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    _redis_or_skip()
    (tmp_path / "bgapp.py").write_text(APP, encoding="utf-8")
    env = clean_env(PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    env.pop("AGENTSTREAM_DURABLE_DB", None)
    done = agentstream(
        "worker", *args, "--stream-store", REDIS, "--database-url", NO_DATABASE, env=env, cwd=tmp_path
    )
    return done.returncode, done.stdout, done.stderr


def test_database_url_reaches_the_app_and_untaken_background_tools_are_warned_about(tmp_path: Path) -> None:
    code, out, err = _worker(tmp_path, "--app", "bgapp:mastra")
    assert f"app sees {NO_DATABASE}" in out
    assert (
        "agentstream worker: warning: bgapp:mastra has background tools (research) but no TOOLS were given, "
        "so this worker takes no background tasks" in err
    )
    assert code == 1 and "cannot start on postgresql://postgres@127.0.0.1:1/nothing" in err


def test_no_warning_when_the_tools_are_given(tmp_path: Path) -> None:
    code, _, err = _worker(tmp_path, "bgapp:tools", "--app", "bgapp:mastra")
    assert "warning" not in err and code == 1
