"""The harness for driving our Mastra API with Mastra's own clients (tests/clients/mastra-server,
installed into ``.cache/mastra-server`` by ``scripts/mastra-clients.sh``):

* `serving` (and the ``demo_api`` fixture): an app on a real uvicorn server on a free loopback
  port, with Studio's origin allowed (CORS with credentials), as ``agentstream serve
  --allow-origin`` does;
* `run_node`: a node script (a file here, or one of the vendored ``check.mjs`` …) run beside the
  installed ``node_modules`` (so ``import '@mastra/client-js'`` resolves), with a time limit;
* `studio`: ``mastra studio`` on loopback (``node --import ./loopback.mjs``) pointed at a server;
* `reference_server`: the real Mastra server (``reference-server.mjs``) for comparing answers;
* `check_results`: ``check.mjs``'s ``PASS (n)`` / ``FAIL (n)`` lines by check number.

Every process started here is stopped by its own handle when its context ends. A missing node,
install or chromium ends the run with one line (tests/_services.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import _services

ROOT = Path(__file__).resolve().parents[2]
MASTRA_CLIENTS = ROOT / ".cache" / "mastra-server"
"""Where ``scripts/mastra-clients.sh`` installs tests/clients/mastra-server (node_modules inside)."""
HERE = Path(__file__).resolve().parent
SHOTS = ROOT / ".cache" / "e2e" / "mastra-api"
"""A copy of the screenshots of the Studio tests' last runs, for a person to look at (.cache is
git-ignored). The tests check their own copies (`studio_shots`), which no other run can touch."""

_install_lock = threading.Lock()
_installed = False


def install_mastra_clients() -> Path:
    """``scripts/mastra-clients.sh`` once per session (copies the sources, ``npm ci`` when the lock
    file changed); the run ends with one line if node or the install fails."""
    global _installed
    _services.require("node")
    with _install_lock:
        if not _installed:
            result = subprocess.run(
                ["bash", str(ROOT / "scripts" / "mastra-clients.sh")],
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
            if result.returncode != 0:
                last = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()[-1]
                _services.fail_run(
                    f"test service unavailable: mastra clients: scripts/mastra-clients.sh failed "
                    f"(exit {result.returncode}): {last[:200]}"
                )
            _installed = True
    return MASTRA_CLIENTS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(app: Any, port: int | None = None) -> Iterator[str]:
    """``app`` on a real uvicorn server on loopback; yields its base URL (no trailing slash)."""
    _services.require("uvicorn")
    import uvicorn

    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the app did not start on uvicorn")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@dataclass(frozen=True)
class ApiServer:
    """A served app: its base URL (Mastra's ``baseUrl``: the API is at ``base_url + "/api"``) and
    the port Studio is to run on (its origin is allowed by the app's guard)."""

    base_url: str
    studio_port: int

    @property
    def studio_origin(self) -> str:
        return f"http://127.0.0.1:{self.studio_port}"


def studio_guard(studio_port: int, **options: Any) -> Any:
    """The `RequestGuard` a Studio on ``studio_port`` needs: its origin allowed, with CORS."""
    from agentstream.server import RequestGuard

    return RequestGuard(allowed_origins=[f"http://127.0.0.1:{studio_port}"], cors=True, **options)


def demo_app(studio_port: int, **options: Any) -> Any:
    """The demo app (offline ``demo`` model) as ``agentstream serve`` builds it, Studio's origin
    allowed."""
    from agentstream._app import create_app

    options.setdefault("delay_in_ms", None)
    return create_app(guard=studio_guard(studio_port), **options)


@pytest.fixture(scope="module")
def demo_api() -> Iterator[ApiServer]:
    """The demo app on a real uvicorn port (one per test module)."""
    install_mastra_clients()
    studio_port = free_port()
    with serving(demo_app(studio_port)) as url:
        yield ApiServer(url, studio_port)


@pytest.fixture
def studio_shots(tmp_path: Path) -> Iterator[Path]:
    """The directory a Studio test's screenshots go to: under the test's own ``tmp_path``, so a
    run in another worktree or process (they share ``.cache``) cannot overwrite what this test
    checks; its path is printed (pytest shows it with a failure). When the test ends, pass or
    fail, each screenshot is copied into `SHOTS` (a whole file replaced at once, never half
    written) for people to look at."""
    shots = tmp_path / "screenshots"
    shots.mkdir()
    print(f"screenshots: {shots} (copied to {SHOTS} when the test ends)")
    try:
        yield shots
    finally:
        SHOTS.mkdir(parents=True, exist_ok=True)
        for shot in sorted(shots.glob("*.png")):
            partial = SHOTS / f".{shot.name}.{os.getpid()}.partial"
            shutil.copyfile(shot, partial)
            os.replace(partial, SHOTS / shot.name)


def _run_dir() -> Path:
    runs = MASTRA_CLIENTS / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=runs))


def run_node(
    script: str | Path, *args: str, timeout: float = 180, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``node script args…`` beside the installed packages.

    ``script``: a path (copied into a fresh directory under ``.cache/mastra-server/runs``, so its
    imports resolve from ``.cache/mastra-server/node_modules`` and concurrent runs from other
    worktrees sharing ``.cache`` do not clash; ``flows-common.mjs`` from beside it goes along), or
    the name of a vendored script (``check.mjs``)."""
    root = install_mastra_clients()
    path = Path(script)
    if path.is_absolute() or path.parent != Path("."):
        target_dir = _run_dir()
        target = target_dir / path.name
        shutil.copyfile(path, target)
        # the module the flows-*.mjs scripts share (their arguments, checks and report), beside them
        common = path.with_name("flows-common.mjs")
        if common.exists():
            shutil.copyfile(common, target_dir / common.name)
    else:
        target_dir, target = None, root / path.name
    try:
        return subprocess.run(
            ["node", str(target), *args],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
            check=False,
        )
    finally:
        if target_dir is not None:
            shutil.rmtree(target_dir, ignore_errors=True)


def check_results(stdout: str) -> dict[int, tuple[bool, str]]:
    """``check.mjs``'s lines by check number: ``(passed, "what: detail")``."""
    out: dict[int, tuple[bool, str]] = {}
    for match in re.finditer(r"^(PASS|FAIL) \((\d+)\) (.*)$", stdout, re.MULTILINE):
        out[int(match.group(2))] = (match.group(1) == "PASS", match.group(3))
    return out


def _wait_http(url: str, process: subprocess.Popen[str], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            output = process.stdout.read() if process.stdout else ""
            raise RuntimeError(f"{what} exited with {process.returncode}: {output[-1500:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not answer {url} within {timeout} s") from None
            time.sleep(0.2)


@contextlib.contextmanager
def _process(command: list[str], url: str, what: str) -> Iterator[subprocess.Popen[str]]:
    root = install_mastra_clients()
    process = subprocess.Popen(
        command,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: stopped with its children, by its id
    )
    try:
        _wait_http(url, process, what)
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)
        if process.stdout:
            process.stdout.close()


@contextlib.contextmanager
def studio(server_url: str, port: int | None = None) -> Iterator[str]:
    """``mastra studio`` on loopback ``port`` talking to the Mastra API at ``server_url``; yields
    Studio's URL."""
    _services.require("chromium")
    port = port or free_port()
    server = urllib.parse.urlsplit(server_url)
    command = [
        "node",
        "--import",
        "./loopback.mjs",
        "node_modules/.bin/mastra",
        "studio",
        "--port",
        str(port),
        "--server-host",
        server.hostname or "127.0.0.1",
        "--server-port",
        str(server.port or 80),
        "--server-protocol",
        server.scheme or "http",
    ]
    url = f"http://127.0.0.1:{port}"
    with _process(command, url, "mastra studio"):
        yield url


@contextlib.contextmanager
def reference_server(cors_origin: str | None = None) -> Iterator[str]:
    """The real Mastra server (``reference-server.mjs``, the demo app in Mastra) on loopback;
    yields its base URL (the API is under ``/api``)."""
    port = free_port()
    command = ["node", "reference-server.mjs", "--port", str(port)]
    if cors_origin:
        command += ["--cors-origin", cors_origin]
    url = f"http://127.0.0.1:{port}"
    with _process(command, url + "/api/agents", "reference-server.mjs"):
        yield url


def chromium() -> str:
    """The chromium the Studio checks drive (``$AGENTSTREAM_CHROMIUM`` or ``chromium`` on PATH)."""
    _services.require("chromium")
    path = _services.chromium_path()
    assert path is not None
    return path


def pending_groups() -> dict[str, str]:
    """The route groups of the Mastra API still unbuilt here (issue 30, part 2: workflows, memory,
    observability), by the path prefix Studio calls them under. A Studio failure on such a path is
    the missing group's, not the page's; once a group answers routes it is no longer pending and
    its failures count like any other."""
    from agentstream import mastra_api
    from agentstream._mastra import Mastra
    from agentstream.mastra_api import _memory, _observability, _workflows
    from agentstream.server import RequestGuard

    context = mastra_api.ApiContext(mastra=Mastra(), guard=RequestGuard())
    groups = {"/api/workflows": _workflows, "/api/memory": _memory, "/api/observability": _observability}
    return {prefix: module.__name__ for prefix, module in groups.items() if not module.routes(context)}


def unexplained_failures(report: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``(failed API calls, console errors)`` of a Studio report that no pending group explains."""
    pending = tuple(pending_groups())

    def as_mastra(call: str) -> bool:
        # A new chat's thread asked for before its first message is saved: Mastra's memory
        # handler answers that 404 too ("Thread not found", packages/server handlers/memory.ts).
        method, _, path = call.partition(" ")[2].partition(" ")
        return (
            method == "GET"
            and call.startswith("404 ")
            and path.count("/") == 4
            and path.startswith("/api/memory/threads/")
        )

    failed = sorted(
        {c for c in report["failedCalls"] if not c.split(" ", 2)[-1].startswith(pending) and not as_mastra(c)}
    )
    tolerated = [c for c in report["failedCalls"] if c not in failed]

    def explained(error: str) -> bool:
        if any(f"{prefix}" in error for prefix in pending):
            return True  # names a pending group's path (a CORS refusal, a client error)
        generic = error.startswith(("Failed to load resource", "Error fetching working memory"))
        return bool(tolerated) and generic  # the browser's line for a failed call, which names no URL

    errors = [e for e in report["consoleErrors"] if not explained(e)]
    return failed, errors
