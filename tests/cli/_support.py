"""Running ``agentstream`` as a user does: a real subprocess, a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRUBBED = (
    "AGENTSTREAM_MODEL",
    "AGENTSTREAM_DEBUG",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "COHERE_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
    "GOOGLE_GENERATIVE_AI_API_KEY",
    "GEMINI_API_KEY",
    "NO_COLOR",
)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env.update(extra)
    return env


def agentstream(
    *args: str,
    stdin: str | bytes = b"",
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    prelude: str = "",
) -> subprocess.CompletedProcess[str]:
    """``agentstream ARGS`` (``prelude`` runs first in the same interpreter, e.g. to hide a module)."""
    code = f"{prelude}\nimport sys\nfrom agentstream.cli import main\nsys.exit(main(sys.argv[1:]))"
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        input=data,
        capture_output=True,
        timeout=120,
        env=env if env is not None else clean_env(),
        cwd=cwd,
    )
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode(errors="replace")
    )


def assert_one_line(proc: subprocess.CompletedProcess[str], command: str, code: int, *parts: str) -> str:
    """The user's mistake is exactly one line ``agentstream <command>: ...`` and exit ``code``."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"agentstream {command}: "), lines[0]
    for part in parts:
        assert part in lines[0], (part, lines[0])
    assert proc.returncode == code, (proc.returncode, lines[0])
    return lines[0]
