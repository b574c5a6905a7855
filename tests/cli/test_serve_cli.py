"""``agentstream serve`` as a user starts it: the console script, a module in the current directory."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from ._support import assert_one_line, clean_env

SCRIPT = Path(sys.executable).with_name("agentstream")  # sys.path[0] is its bin/, not the cwd

APP = """
from agentstream import Agent, Mastra

helper = Agent(id="helper", name="Helper", instructions="Be brief.", model="demo")
keyless = Agent(id="writer", name="Writer", instructions="", model="openai/gpt-4o-mini")
needs_key = Mastra(agents={"helper": helper, "writer": keyless})

async def raw(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"raw asgi"})
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if not SCRIPT.exists():
        pytest.fail(
            f"{SCRIPT} is missing: the agentstream console script is installed by pip install -e '.[dev]'"
        )
    (tmp_path / "myproject.py").write_text(APP)
    (tmp_path / "broken.py").write_text("raise RuntimeError('config missing')\n")
    return tmp_path


def serve(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "serve", *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=clean_env()
    )


def _serving(cwd: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [str(SCRIPT), "serve", "--port", "0", *args],
        cwd=cwd,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=clean_env(),
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "http://" in line:
            return proc, line.split("serve: ", 1)[1].strip()
    proc.kill()
    raise AssertionError("serve never printed its URL")


@pytest.mark.parametrize(("attr", "check"), [("helper", "agents"), ("raw", "raw")])
def test_serves_an_agent_or_an_asgi_app_from_the_current_directory(
    project: Path, attr: str, check: str
) -> None:
    proc, url = _serving(project, "--app", f"myproject:{attr}")
    try:
        if check == "agents":
            assert httpx.get(f"{url}api/chat/info", timeout=30).json() == {
                "agents": [{"id": "helper", "name": "Helper"}],
                "resumable": True,
            }
        else:
            assert httpx.get(url, timeout=30).text == "raw asgi"
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130  # uvicorn shuts down, then the Ctrl-C ends the process as usual
    assert "Traceback" not in err


def test_an_agent_without_its_key_stops_the_server_before_it_starts(project: Path) -> None:
    proc = serve(project, "--app", "myproject:needs_key", "--port", "0")
    assert_one_line(proc, "serve", 1, "agent 'writer' cannot use its model", "OPENAI_API_KEY")


def test_a_module_that_fails_to_import(project: Path) -> None:
    proc = serve(project, "--app", "broken:app", "--port", "0")
    assert_one_line(proc, "serve", 1, "importing 'broken' failed: RuntimeError: config missing", "broken.py")


def test_a_module_that_is_not_there(project: Path) -> None:
    proc = serve(project, "--app", "myprojekt:helper")
    assert_one_line(proc, "serve", 2, "no module named 'myprojekt'", str(project))


def test_a_busy_port(project: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = serve(project, "--app", "myproject:helper", "--port", str(port))
    assert_one_line(proc, "serve", 1, f"port {port} on 127.0.0.1 is already in use", "--port")


def test_trace_prints_each_runs_span_tree(project: Path) -> None:
    proc, url = _serving(project, "--app", "myproject:helper", "--trace")
    try:
        for n in (1, 2):
            body = {
                "id": f"chat-{n}",
                "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": f"hello {n}"}]}],
                "trigger": "submit-message",
            }
            response = httpx.post(
                f"{url}api/chat",
                json=body,
                timeout=60,
                headers={"traceparent": f"00-{'ab' * 16}-{'cd' * 8}-01"},
            )
            assert response.status_code == 200 and '"type":"finish"' in response.text
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err
    trees = [block.splitlines() for block in err.split("[trace]\n")[1:]]
    assert len(trees) == 2, err  # one per request, though both continue the caller's trace
    for tree in trees:
        assert tree[0].startswith("invoke_agent Helper  ") and "model=demo" in tree[0], tree
        assert tree[1].startswith("└─ chat demo  ") and "finish=stop" in tree[1], tree


def test_trace_without_the_sdk_is_one_line(project: Path) -> None:
    from ._support import agentstream

    proc = agentstream(
        "serve",
        "--trace",
        "--port",
        "0",
        prelude="import sys; sys.modules['opentelemetry.sdk'] = None",
        cwd=project,
    )
    assert_one_line(proc, "serve", 1, "--trace needs the OpenTelemetry SDK", "pip install")


def _chat(url: str, text: str) -> None:
    body = {
        "id": "chat-traced",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}],
        "trigger": "submit-message",
    }
    response = httpx.post(f"{url}api/chat", json=body, timeout=60)
    assert response.status_code == 200 and '"type":"finish"' in response.text, response.text[-500:]


def _traces(url: str) -> list[dict[str, object]]:
    listed = httpx.get(f"{url}api/observability/traces", timeout=30)
    assert listed.status_code == 200, listed.text
    spans: list[dict[str, object]] = listed.json()["spans"]
    return spans


@pytest.mark.parametrize("extra", [[], ["--trace"]])
def test_serve_keeps_each_runs_trace_for_studio(project: Path, extra: list[str]) -> None:
    # A plain `serve` (and one printing trees with --trace) records the runs' spans in the app's
    # storage, prompts included, so Studio's traces pages have something to show.
    proc, url = _serving(project, "--app", "myproject:helper", *extra)
    try:
        _chat(url, "hello traces")
        roots = _traces(url)
        assert [r["name"] for r in roots] == ["agent run: 'helper'"], roots
        trace = httpx.get(f"{url}api/observability/traces/{roots[0]['traceId']}", timeout=30).json()
        model = next(s for s in trace["spans"] if s["spanType"] == "model_generation")
        assert "hello traces" in str(model["input"]), model
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err
    assert ("[trace]\ninvoke_agent Helper" in err) == bool(extra), err


def test_no_record_traces_keeps_none(project: Path) -> None:
    proc, url = _serving(project, "--app", "myproject:helper", "--no-record-traces")
    try:
        _chat(url, "hello")
        assert _traces(url) == []
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def test_serving_without_the_sdk_warns_once_and_serves(project: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['opentelemetry.sdk'] = None\n"
            "from agentstream.cli import main\nsys.exit(main(sys.argv[1:]))",
            *("serve", "--port", "0", "--app", "myproject:helper"),
        ],
        cwd=project,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=clean_env(),
    )
    assert proc.stderr is not None
    stderr = proc.stderr
    # every line, read by one reader to the end: the warning may come in the same read as the URL
    # (then a second reader, such as communicate(), which reads the pipe itself, never sees it)
    lines: list[str] = []
    printed = threading.Event()

    def read() -> None:
        for line in stderr:
            lines.append(line)
            if "http://" in line:
                printed.set()
        printed.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert printed.wait(60), "serve never printed its URL"
    url = next(line for line in lines if "http://" in line).split("serve: ", 1)[1].strip()
    try:
        _chat(url, "hello")
        assert _traces(url) == []
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        reader.join(10)
    warnings = [line for line in lines if "no traces are kept" in line]
    assert len(warnings) == 1 and "pip install 'agentstream[otel]'" in warnings[0], lines
    assert not any("Traceback" in line for line in lines), lines
