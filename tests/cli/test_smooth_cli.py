"""``agentstream smooth`` as a real subprocess: streaming line by line, bad lines, exit codes."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from typing import Any

import pytest

from tests import _services


def delta(text: str, id: str = "t1") -> str:
    return json.dumps(
        {"type": "text-delta", "runId": "r", "from": "AGENT", "payload": {"id": id, "text": text}}
    )


FINISH = json.dumps(
    {
        "type": "finish",
        "runId": "r",
        "from": "AGENT",
        "payload": {
            "stepResult": {"reason": "stop", "warnings": [], "isContinued": False},
            "output": {"usage": {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8}},
            "metadata": {},
        },
    }
)


def spawn(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentstream", "smooth", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def line_reader(proc: subprocess.Popen[bytes]) -> queue.Queue[bytes]:
    lines: queue.Queue[bytes] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in iter(proc.stdout.readline, b""):
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def text_of(line: bytes) -> Any:
    return json.loads(line)["payload"].get("text")


def test_streams_each_line_as_soon_as_it_is_produced() -> None:
    proc = spawn("--delay-ms", "none")
    assert proc.stdin is not None
    lines = line_reader(proc)
    try:
        proc.stdin.write((delta("Hello wor") + "\n").encode())
        proc.stdin.flush()
        # stdin is still open: the first word must already be out.
        assert text_of(lines.get(timeout=30)) == "Hello "
        proc.stdin.write((delta("ld again ") + "\n").encode())
        proc.stdin.flush()
        assert text_of(lines.get(timeout=10)) == "world "
        assert text_of(lines.get(timeout=10)) == "again "
        proc.stdin.write((delta("tail") + "\n" + FINISH + "\n").encode())
        proc.stdin.close()
        assert text_of(lines.get(timeout=10)) == "tail"
        assert json.loads(lines.get(timeout=10))["type"] == "finish"
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()


def test_bad_line_reported_with_number_after_everything_before_it() -> None:
    proc = spawn("--delay-ms", "0", "--chunking", "line")
    lines = [delta("one\ntw"), delta("o\nthr"), "", "{not json", delta("never")]
    out, err = proc.communicate(("\n".join(lines) + "\n").encode(), timeout=60)
    assert proc.returncode == 1
    assert [text_of(x) for x in out.splitlines()] == ["one\n", "two\n", "thr"]
    assert b"line 4" in err


def test_malformed_chunk_names_the_field() -> None:
    bad = json.dumps(
        {"type": "text-delta", "runId": "r", "from": "AGENT", "payload": {"id": "t1", "text": 42}}
    )
    proc = spawn("--delay-ms", "none")
    out, err = proc.communicate(f"{delta('n=')}\n{bad}\n".encode(), timeout=60)
    assert proc.returncode == 1
    assert [text_of(x) for x in out.splitlines()] == ["n="]
    assert b"line 2" in err and b"payload.text" in err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--chunking", "regex:[^,]*,\\s*"], ["a, ", "b,", "c"]),
        (["--chunking", "regex:/B,/i"], ["a, b,", "c"]),
        (["--chunking", "grapheme"], ["a", ",", " ", "b", ",", "c"]),
    ],
)
def test_chunking_modes(args: list[str], expected: list[str]) -> None:
    proc = spawn("--delay-ms", "none", *args)
    out, err = proc.communicate(f"{delta('a, b,c')}\n".encode(), timeout=60)
    assert proc.returncode == 0, err
    assert [text_of(x) for x in out.splitlines()] == expected


def test_segmenter_chunking() -> None:
    _services.require("icu4py")
    proc = spawn("--delay-ms", "none", "--chunking", "segmenter:ja")
    out, err = proc.communicate(f"{delta('こんにちは世界')}\n".encode(), timeout=60)
    assert proc.returncode == 0, err
    assert [text_of(x) for x in out.splitlines()] == ["こんにちは", "世界"]


@pytest.mark.parametrize("args", [["--chunking", "sentence"], ["--delay-ms", "soon"]])
def test_bad_arguments(args: list[str]) -> None:
    proc = spawn(*args)
    _, err = proc.communicate(b"", timeout=60)
    assert proc.returncode == 2
    assert b"agentstream smooth:" in err
