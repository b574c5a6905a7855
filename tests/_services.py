"""The services the tests need (PostgreSQL, Redis, DBOS, node with the client checks, chromium).

A service that is not there fails the run: a green run that skipped the PostgreSQL contract or the
browser checks looks like a pass and is not one. Each check runs at most once per session; the first
test (or the session-start check in ``tests/conftest.py``) that needs a missing service ends the run
with one line naming the service and why it is unavailable (exit status ``EXIT_SERVICE``).

Where each service is expected: ``AGENTSTREAM_TEST_PG_DSN`` (default: the cluster
``scripts/postgres.sh`` starts), ``AGENTSTREAM_TEST_REDIS_URL`` (default: ``scripts/redis.sh``'s
server), node and ``.cache/clients`` (``scripts/clients.sh``), chromium (``$AGENTSTREAM_CHROMIUM`` or
``chromium`` on ``PATH``; ``scripts/clients.sh --browser``).
"""

from __future__ import annotations

import functools
import importlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = ROOT / ".cache" / "clients"
DEFAULT_PG_DSN = "postgresql://postgres@127.0.0.1:54329/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:56379/0"
EXIT_SERVICE = 3  # pytest's own codes are 0-5; 3 ("internal error") is not one a plain test failure gives


def pg_dsn() -> str:
    return os.environ.get("AGENTSTREAM_TEST_PG_DSN", DEFAULT_PG_DSN)


def redis_url() -> str:
    return os.environ.get("AGENTSTREAM_TEST_REDIS_URL", DEFAULT_REDIS_URL)


def chromium_path() -> str | None:
    return os.environ.get("AGENTSTREAM_CHROMIUM") or shutil.which("chromium")


def _detail(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"


def _postgres() -> str | None:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - a dev install has it
        return f"psycopg is not installed ({exc}); pip install -e '.[dev]'"
    try:
        with psycopg.connect(pg_dsn(), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return f"unreachable at {pg_dsn()} ({_detail(exc)}); run scripts/postgres.sh"
    return None


def _redis() -> str | None:
    try:
        import redis
    except ImportError as exc:  # pragma: no cover - a dev install has it
        return f"redis-py is not installed ({exc}); pip install -e '.[dev]'"
    client = redis.Redis.from_url(redis_url(), socket_connect_timeout=3, socket_timeout=3)
    try:
        client.ping()
    except Exception as exc:
        return f"unreachable at {redis_url()} ({_detail(exc)}); run scripts/redis.sh"
    finally:
        client.close()
    return None


def _redis_server() -> str | None:
    if shutil.which("redis-server") is None:
        return "redis-server is not on PATH (the fault tests start their own); run scripts/redis.sh"
    return None


def _module(name: str) -> Callable[[], str | None]:
    def check() -> str | None:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            return f"the {name} package cannot be imported ({_detail(exc)}); pip install -e '.[dev]'"
        return None

    return check


def _node() -> str | None:
    if shutil.which("node") is None:
        return "node is not on PATH; run scripts/clients.sh"
    if not (CLIENTS / "node_modules").is_dir():
        # The client checks are installed on first use, as `scripts/clients.sh` would.
        result = subprocess.run(
            ["bash", str(ROOT / "scripts" / "clients.sh")], capture_output=True, text=True, timeout=600
        )
        if result.returncode != 0:
            last = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()[-1]
            return f"scripts/clients.sh failed (exit {result.returncode}): {last[:200]}"
    return None


def _chromium() -> str | None:
    chromium = chromium_path()
    if chromium is None or not Path(chromium).exists():
        return f"chromium is missing ({chromium or 'not on PATH'}); run scripts/clients.sh --browser"
    if not (CLIENTS / "node_modules" / "playwright-core" / "package.json").exists():
        return f"{CLIENTS / 'node_modules' / 'playwright-core'} is missing; run scripts/clients.sh --browser"
    return None


def _usechat_page() -> str | None:
    if not (CLIENTS / "web" / "dist" / "index.html").exists():
        return "the useChat page is not built (.cache/clients/web/dist); run scripts/clients.sh --browser"
    return None


# Name shown in the failure line -> its check (None: available; else why not).
CHECKS: dict[str, Callable[[], str | None]] = {
    "postgres": _postgres,
    "redis": _redis,
    "redis-server": _redis_server,
    "dbos": _module("dbos"),
    "uvicorn": _module("uvicorn"),
    "starlette": _module("starlette"),
    "icu4py": _module("icu4py"),
    "node": _node,
    "chromium": _chromium,
    "usechat-page": _usechat_page,
}
# Chromium is driven through node's playwright; the useChat page is opened in chromium.
IMPLIES: dict[str, tuple[str, ...]] = {"chromium": ("node",), "usechat-page": ("chromium",)}


@functools.cache
def problem(name: str) -> str | None:
    """Why ``name`` is unavailable, or ``None``; checked once per process."""
    if name not in CHECKS:
        raise ValueError(f"unknown test service {name!r}; expected one of {sorted(CHECKS)}")
    for needed in IMPLIES.get(name, ()):
        if (why := problem(needed)) is not None:
            return why
    return CHECKS[name]()


def line(names: list[str]) -> str | None:
    """The one line naming every unavailable service of ``names`` and why, or ``None``."""
    missing = [f"{name}: {why}" for name in dict.fromkeys(names) if (why := problem(name)) is not None]
    if not missing:
        return None
    return "test service unavailable: " + "; ".join(missing)


def fail_run(message: str) -> NoReturn:
    """End the whole run with ``message`` as its one line (not a skip, not one failure among many)."""
    pytest.exit(message, returncode=EXIT_SERVICE)


def require(*names: str) -> None:
    """Ends the run with one line if any of ``names`` is unavailable."""
    message = line(list(names))
    if message is not None:
        fail_run(message)
