"""``smooth`` and ``to-ui`` in live pipelines: a bad line while the input is still open, a reader that
goes away, file input. Issue: ``(echo '{bad'; sleep 1) | agentstream smooth`` died with ``Fatal Python
error: _enter_buffered_busy`` (its stdin reader was a daemon thread)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ._support import clean_env

COMMANDS = [["smooth", "--delay-ms", "none"], ["to-ui"]]


def delta(text: str) -> str:
    return json.dumps(
        {"type": "text-delta", "runId": "r", "from": "AGENT", "payload": {"id": "t", "text": text}}
    )


def spawn(args: list[str], stdin: object = subprocess.PIPE) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentstream", *args],
        stdin=stdin,  # type: ignore[arg-type]
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )


def assert_bad_line_reported(err: bytes) -> None:
    text = err.decode()
    assert "Fatal Python error" not in text and "Traceback" not in text and "Exception" not in text, text
    assert len(text.splitlines()) == 1 and "line 2" in text, text


@pytest.mark.parametrize("args", COMMANDS)
def test_a_bad_line_ends_the_filter_while_its_input_is_still_open(args: list[str]) -> None:
    proc = spawn(args)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(f"{delta('good words ')}\n{{bad\n".encode())
    proc.stdin.flush()  # and keep stdin open, as `(echo ...; sleep 1) |` does
    try:
        assert proc.wait(timeout=60) == 1
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        proc.stdin.close()
        proc.kill()
    assert_bad_line_reported(err)
    assert "good" in out.decode()  # nothing before the bad line is lost


@pytest.mark.parametrize("args", COMMANDS)
def test_a_bad_line_in_a_file(args: list[str], tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(f"{delta('good words ')}\n{{bad\n")
    for _ in range(3):  # the daemon-thread reader failed in 18 of 30 runs
        with path.open("rb") as stdin:
            proc = spawn(args, stdin)
            out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1
        assert_bad_line_reported(err)
        assert "good" in out.decode()


@pytest.mark.parametrize("args", COMMANDS)
def test_a_reader_that_goes_away_ends_the_filter_quietly(args: list[str], tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(f"{delta(f'word{i} ')}\n" for i in range(20_000)))
    with path.open("rb") as stdin:
        proc = spawn(args, stdin)
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline()  # `| head -1`
        proc.stdout.close()
        assert proc.wait(timeout=60) == 0
        assert proc.stderr.read() == b""


@pytest.mark.parametrize("args", COMMANDS)
def test_empty_input(args: list[str]) -> None:
    proc = spawn(args, subprocess.DEVNULL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and err == b""
