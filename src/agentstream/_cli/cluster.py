"""``agentstream cluster``: PostgreSQL, Redis, servers and workers on loopback, for trying it locally.

The services come from ``--database-url`` / ``--redis-url`` or, in a source checkout, from
``scripts/postgres.sh`` / ``scripts/redis.sh`` (started or reused; they keep running afterwards).
Every server and worker is a child process in a session of its own, so a terminal's Ctrl-C reaches
only this command, which then stops them in one go (SIGTERM, SIGKILL after a grace period). A child
that dies before it is ready stops everything with one line; one that dies later (say, ``kill -9``
to watch another worker take over) is reported and the rest keep running.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import CLIError, UsageError, missing_extra
from .serve import _port

__all__ = ["add_parser", "run"]

DEFAULT_APP = "examples.durable_demo:mastra"
DEFAULT_TOOLS = "examples.durable_demo:tools"
_SERVING = re.compile(rb"agentstream serve: (http://\S+?)/?(?:#\S*)?$")
_WORKING = re.compile(rb"agentstream worker \S+: running")
_GRACE_S = 15.0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "cluster",
        help="start a local cluster: PostgreSQL, Redis, servers and workers on 127.0.0.1",
        description=(
            "Start PostgreSQL and Redis (or use --database-url / --redis-url), then --servers "
            "`agentstream serve` and --workers `agentstream worker` processes on 127.0.0.1, sharing "
            "them; print the URLs; stop them all on Ctrl-C or SIGTERM. A process that dies after "
            "start-up (try kill -9 on a worker) is reported and the others keep running."
        ),
    )
    parser.add_argument("--servers", type=_counter(1), default=2, metavar="N", help="server processes (2)")
    parser.add_argument(
        "--workers",
        type=_counter(0),
        default=2,
        metavar="N",
        help="worker processes (2); 0: the servers answer the chats themselves, sharing Redis",
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=8001,
        help="first server's port, the next ones follow; 0: free ports (8001)",
    )
    parser.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help=(
            "the Mastra the servers serve and whose chat turns the workers run (default "
            f"{DEFAULT_APP}, in a source checkout)"
        ),
    )
    parser.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help=(
            "background tools the workers run too (agentstream worker TOOLS; default "
            f"{DEFAULT_TOOLS} with the default app)"
        ),
    )
    parser.add_argument(
        "--database-url",
        metavar="URL",
        default=os.environ.get("AGENTSTREAM_DURABLE_DB") or None,
        help="PostgreSQL for the durable queue (default: $AGENTSTREAM_DURABLE_DB, else scripts/postgres.sh)",
    )
    parser.add_argument(
        "--redis-url",
        metavar="URL",
        help="Redis for the stream store (default: scripts/redis.sh's server)",
    )
    parser.add_argument(
        "--logs", metavar="DIR", type=Path, help="where each process's output goes (a temp dir)"
    )
    parser.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="pass ARG to every server, e.g. --serve-arg=--no-smooth",
    )
    parser.add_argument(
        "--worker-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="pass ARG to every worker, e.g. --worker-arg=--no-smooth",
    )
    parser.add_argument(
        "--startup-timeout",
        type=_seconds,
        default=90.0,
        metavar="S",
        help="give up on a process not ready after S seconds (90)",
    )
    parser.set_defaults(func=run)
    return parser


def _counter(least: int) -> Callable[[str], int]:
    def count(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if not least <= value <= 16:
            raise argparse.ArgumentTypeError(f"expected a whole number from {least} to 16, got {text!r}")
        return value

    return count


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < 86_400:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def _checkout() -> Path | None:
    """The source checkout this package runs from (editable install), or ``None`` (from PyPI)."""
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").is_file() and (root / "scripts" / "postgres.sh").is_file():
        return root
    return None


def _script(checkout: Path | None, name: str, flag: str) -> str:
    """Run ``scripts/<name>`` (start or reuse the service); the URL it serves."""
    if checkout is None:
        raise UsageError(
            f"no {flag} given, and scripts/{name} ships with the source checkout only: "
            f"pass {flag} (a server you run)"
        )
    try:
        done = subprocess.run(
            ["bash", str(checkout / "scripts" / name)],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CLIError(f"scripts/{name} failed: {exc}; pass {flag} instead") from exc
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise CLIError(f"scripts/{name} failed ({last}); pass {flag} instead")
    return (
        "postgresql://postgres@127.0.0.1:54329/postgres"
        if name == "postgres.sh"
        else "redis://127.0.0.1:56379/0"
    )


def _check_services(database_url: str, redis_url: str) -> None:
    """Both services answer now: one clear line instead of four processes failing the same way."""
    try:
        import dbos  # noqa: F401  (the workers need it: fail here, once)
        import psycopg
        import redis
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise missing_extra(exc, "agentstream cluster") or exc from exc
    from .worker import _redacted

    if not database_url.startswith(("postgresql://", "postgres://")):
        raise UsageError(f"--database-url: expected postgresql://…, got {_redacted(database_url)!r}")
    if not redis_url.startswith(("redis://", "rediss://", "unix://")):
        raise UsageError(f"--redis-url: expected redis://HOST:PORT/DB, got {redis_url!r}")
    try:
        psycopg.connect(database_url, connect_timeout=5).close()
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CLIError(f"cannot reach PostgreSQL at {_redacted(database_url)} ({reason})") from exc
    try:
        redis.Redis.from_url(redis_url, socket_connect_timeout=5).ping()
    except (redis.RedisError, ValueError) as exc:
        raise CLIError(f"cannot reach Redis at {redis_url} ({exc})") from exc


@dataclass
class _Child:
    """One server or worker: its command, its log, and what it said when it got ready."""

    name: str
    argv: list[str]
    log: Path
    is_server: bool
    process: asyncio.subprocess.Process | None = None
    url: str | None = None
    last_line: str = ""
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def pid(self) -> int:
        return self.process.pid if self.process is not None else 0

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def describe_exit(self) -> str:
        code = self.returncode
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return f"was killed by {signal.Signals(-code).name}"
        return f"exited with code {code}"


def _children(args: argparse.Namespace, database_url: str, redis_url: str, logs: Path) -> list[_Child]:
    python = [sys.executable, "-m", "agentstream"]
    shared = ["--stream-store", redis_url]
    children = []
    for i in range(args.servers):
        port = 0 if args.port == 0 else args.port + i
        if port > 65535:
            raise UsageError(f"--port {args.port} with --servers {args.servers} runs past port 65535")
        argv = [*python, "serve", "--app", args.app, "--host", "127.0.0.1", "--port", str(port), *shared]
        argv += ["--durable-db", database_url] if args.workers else []
        argv += args.serve_arg
        children.append(_Child(f"server {i + 1}", argv, logs / f"server-{i + 1}.log", True))
    for i in range(args.workers):
        argv = [*python, "worker", *([args.tools] if args.tools else []), "--app", args.app, *shared]
        argv += ["--database-url", database_url, *args.worker_arg]
        children.append(_Child(f"worker {i + 1}", argv, logs / f"worker-{i + 1}.log", False))
    return children


def _environment(database_url: str | None, redis_url: str, checkout: Path | None) -> dict[str, str]:
    """The children's environment; without workers no AGENTSTREAM_DURABLE_DB (`serve`'s default
    for --durable-db), so the servers answer the chats themselves."""
    # The children import the app from the current directory (as `serve --app` does), and the
    # default app from the checkout's examples/.
    paths = [os.getcwd(), *([str(checkout)] if checkout else [])]
    existing = os.environ.get("PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k != "AGENTSTREAM_DURABLE_DB"}
    env.update(
        AGENTSTREAM_STREAM_STORE=redis_url,
        PYTHONPATH=os.pathsep.join([*paths, *([existing] if existing else [])]),
    )
    if database_url is not None:
        env["AGENTSTREAM_DURABLE_DB"] = database_url
    return env


def _parent_death_signal() -> Callable[[], None] | None:
    """Linux: a child gets SIGTERM if this process dies without stopping it (say, ``kill -9``)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGTERM)


async def _spawn(child: _Child, env: dict[str, str]) -> None:
    """Start the child and copy its output to its log until it closes, watching for "ready"."""
    child.process = await asyncio.create_subprocess_exec(
        *child.argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # Ctrl-C in a terminal reaches us, and we stop the children once
        preexec_fn=_parent_death_signal(),
    )
    assert child.process.stdout is not None
    pending = b""
    with child.log.open("wb") as log:
        while data := await child.process.stdout.read(65536):
            log.write(data)
            log.flush()
            lines = (pending + data).split(b"\n")
            pending = lines.pop()[-65536:]
            for line in lines:
                _saw(child, line.rstrip(b"\r"))
    await child.process.wait()


def _saw(child: _Child, line: bytes) -> None:
    if line.strip():
        child.last_line = line.decode(errors="replace").strip()[:500]
    if child.is_server and child.url is None and (match := _SERVING.search(line)):
        child.url = match.group(1).decode()
    elif not child.is_server and _WORKING.search(line):
        child.ready.set()


async def _listening(child: _Child) -> None:
    """A server is ready once it printed its URL and accepts connections on it."""
    while child.url is None:
        await asyncio.sleep(0.05)
    host, _, port = child.url.removeprefix("http://").rpartition(":")
    while True:
        try:
            _, writer = await asyncio.open_connection(host.strip("[]"), int(port))
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        child.ready.set()
        return


async def _started(children: list[_Child], timeout: float, stop: asyncio.Event) -> bool:
    """Wait until every child is ready; `CLIError` naming the first that died or hung. False: stopped."""

    async def ready(child: _Child) -> None:
        if child.is_server:
            await _listening(child)
        await child.ready.wait()

    async def died(child: _Child) -> _Child:
        while child.process is None:
            await asyncio.sleep(0.01)
        await child.process.wait()
        return child

    waits = [asyncio.ensure_future(ready(c)) for c in children]
    deaths = [asyncio.ensure_future(died(c)) for c in children]
    stopping = asyncio.ensure_future(stop.wait())
    all_ready = asyncio.ensure_future(asyncio.gather(*waits))
    watched: list[asyncio.Future[Any]] = [all_ready, stopping, *deaths]
    try:
        done, _ = await asyncio.wait(watched, timeout=timeout, return_when="FIRST_COMPLETED")
        if all_ready in done:
            return True
        if stopping in done:
            return False
        dead = next((task.result() for task in deaths if task in done), None)
        if dead is not None:
            said = f": {dead.last_line}" if dead.last_line else ""
            error = UsageError if dead.returncode == 2 else CLIError  # its command line is ours: --app, …
            raise error(f"{dead.name} {dead.describe_exit()} while starting{said} (log: {dead.log})")
        late = next(c for c in children if not c.ready.is_set())
        raise CLIError(f"{late.name} was not ready after {timeout:g} s (log: {late.log})")
    finally:
        for task in [*waits, *watched]:
            task.cancel()
        await asyncio.gather(*waits, *watched, return_exceptions=True)


async def _supervise(children: list[_Child], stop: asyncio.Event) -> int:
    """Report children that die; return when stopped (0) or when none is left (1)."""
    alive = {asyncio.ensure_future(c.process.wait()): c for c in children if c.process is not None}
    stopping = asyncio.ensure_future(stop.wait())
    try:
        while alive:
            done, _ = await asyncio.wait([stopping, *alive], return_when="FIRST_COMPLETED")
            if stopping in done:
                return 0
            for task in done:
                child = alive.pop(task)
                rest = (
                    f"{len(alive)} other process{'es' if len(alive) != 1 else ''} keep running"
                    if alive
                    else "none is left"
                )
                _say(f"{child.name} (pid {child.pid}) {child.describe_exit()}; {rest} (log: {child.log})")
        return 1
    finally:
        stopping.cancel()
        for task in alive:
            task.cancel()


async def _stop_all(children: list[_Child]) -> None:
    """SIGTERM to every child still running, SIGKILL to those still there after the grace period."""
    running = [c.process for c in children if c.process is not None and c.process.returncode is None]
    for process in running:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
    if not running:
        return
    _, late = await asyncio.wait([asyncio.ensure_future(p.wait()) for p in running], timeout=_GRACE_S)
    for process in running:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
    for task in late:
        await task


def _say(message: str) -> None:
    print(f"agentstream cluster: {message}", file=sys.stderr, flush=True)


def _announce(children: list[_Child], database_url: str, redis_url: str, logs: Path) -> None:
    from .worker import _redacted

    _say(f"PostgreSQL {_redacted(database_url)}, Redis {redis_url}")
    for child in children:
        where = f"{child.url}/ " if child.url else ""
        _say(f"{child.name} {where}(pid {child.pid})")
    _say(f"logs in {logs}; Ctrl-C stops the servers and workers")


async def _main(args: argparse.Namespace, database_url: str, redis_url: str, env: dict[str, str]) -> int:
    logs = args.logs or Path(tempfile.mkdtemp(prefix="agentstream-cluster-"))
    try:
        logs.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--logs {str(logs)!r}: cannot create it ({exc.strerror or exc})") from exc
    children = _children(args, database_url, redis_url, logs)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    spawned = [asyncio.ensure_future(_spawn(child, env)) for child in children]
    try:
        if not await _started(children, args.startup_timeout, stop):
            return 130
        _announce(children, database_url, redis_url, logs)
        return await _supervise(children, stop)
    finally:
        await _stop_all(children)
        await asyncio.gather(*spawned, return_exceptions=True)
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        if stop.is_set():
            _say("stopped")


def run(args: argparse.Namespace) -> int:
    checkout = _checkout()
    if args.app is None:
        if args.workers == 0:
            raise UsageError(
                f"--workers 0 needs --app: the default app ({DEFAULT_APP}) runs tools on workers"
            )
        if checkout is None:
            raise UsageError(
                f"the default app ({DEFAULT_APP}) ships with the source checkout only: pass --app MODULE:ATTR"
            )
        args.app, args.tools = DEFAULT_APP, args.tools or DEFAULT_TOOLS
    database_url = args.database_url or _script(checkout, "postgres.sh", "--database-url")
    redis_url = args.redis_url or _script(checkout, "redis.sh", "--redis-url")
    _check_services(database_url, redis_url)
    env = _environment(database_url if args.workers else None, redis_url, checkout)
    return asyncio.run(_main(args, database_url, redis_url, env))
