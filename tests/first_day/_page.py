"""docs/first-day.md as the tests read it: its files (blocks with a ``title``), each numbered
section's commands and the output it shows, and a way to run a command as the page says."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from ..docs._markdown import ROOT, Block, blocks

PAGE = ROOT / "docs" / "first-day.md"
DOC_PORT = "8000"
"""The port the page's commands use; the tests put a free one in its place, nothing else."""


def _sections() -> dict[int, list[Block]]:
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    starts = [
        (i + 1, int(m.group(1))) for i, line in enumerate(lines) if (m := re.match(r"## (\d+)\. ", line))
    ]
    out: dict[int, list[Block]] = {}
    for index, (line, number) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(lines) + 1
        out[number] = [b for b in blocks(PAGE) if line < b.line < end]
    return out


def files() -> dict[str, str]:
    """``{"shop.py": code, ...}``: every block of the page with a ``title``."""
    return {b.title: b.code for b in blocks(PAGE) if b.title}


def commands(section: int) -> list[str]:
    """The shell commands of a section, one per line (comments dropped, ``\\`` lines joined)."""
    out: list[str] = []
    for block in _sections()[section]:
        if block.language != "bash":
            continue
        text = block.code.replace("\\\n", " ")
        pending = ""
        for line in text.splitlines():
            pending += line + "\n"
            if pending.count("'") % 2 == 0:  # a quoted body may span lines
                command = (
                    re.sub(r"\s+#.*$", "", pending.strip()) if pending.count("'") == 0 else pending.strip()
                )
                if command and not command.startswith("#"):
                    out.append(command)
                pending = ""
    return out


def comments(section: int) -> list[str]:
    """The ``# ...`` comments after the commands of a section (what each one prints)."""
    return [
        m.group(1)
        for block in _sections()[section]
        if block.language == "bash"
        for m in re.finditer(r"\s#\s+(.*)$", block.code, re.M)
    ]


def shown_output(section: int) -> str:
    """The section's ``text`` block after its commands: the output the page promises."""
    texts = [b.code for b in _sections()[section] if b.language == "text"]
    assert texts, f"section {section} of {PAGE.name} shows no output"
    return texts[-1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def environment(cwd: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("AGENTSTREAM_MODEL", "OPENAI_API_KEY", "NO_COLOR")
    }
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(cwd)]), NO_COLOR="1", **extra)
    return env


PRELUDE = (
    "set -euo pipefail\n"
    f'agentstream() {{ "{sys.executable}" -m agentstream "$@"; }}\n'
    f'python() {{ "{sys.executable}" "$@"; }}\n'
)


def shell(command: str, cwd: Path, port: int | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
    """Run one of the page's commands (its port replaced by ``port``) to the end."""
    if port is not None:
        command = command.replace(DOC_PORT, str(port))
    return subprocess.run(
        ["bash", "-c", PRELUDE + command],
        cwd=cwd,
        env=environment(cwd, **extra),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _as_module(command: str) -> str:
    """``agentstream serve …`` / ``uvicorn …`` as this interpreter's modules (``exec`` needs a program)."""
    program, _, rest = command.partition(" ")
    assert program in ("agentstream", "uvicorn"), f"not a server command: {command!r}"
    return f'"{sys.executable}" -m {program} {rest}'


@contextlib.contextmanager
def server(command: str, cwd: Path, port: int) -> Iterator[subprocess.Popen[str]]:
    """One of the page's server commands, running on ``port`` until the block ends."""
    proc = subprocess.Popen(
        ["bash", "-c", "exec " + _as_module(command.replace(DOC_PORT, str(port)))],
        cwd=cwd,
        env=environment(cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                output = proc.stdout.read() if proc.stdout else ""
                raise AssertionError(f"{command!r} did not start listening on {port}:\n{output}")
            time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
