"""The command line's one error path: a user's mistake is one line on stderr, never a traceback.

Subcommands raise `UsageError` (exit 2: the command line itself is wrong) or
`CLIError` (exit 1: the environment or the input is); `report` turns those, and the
library errors a user can cause (a missing extra, a missing API key, ...), into
``agentstream <command>: <what is wrong and how to fix it>``. ``AGENTSTREAM_DEBUG=1`` adds the
traceback.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import TextIO

__all__ = ["EXTRAS", "CLIError", "UsageError", "debug", "explain", "missing_extra", "report"]

EXIT_RUNTIME = 1
EXIT_USAGE = 2

EXTRAS = {
    "starlette": "server",
    "uvicorn": "server",
    "icu4py": "icu",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "redis": "redis",
    "dbos": "durable",
    "sqlalchemy": "durable",
}
"""Top-level module → the ``agentstream`` extra that installs it."""


class CLIError(Exception):
    """A mistake the user can fix; ``str()`` is the message, `code` the exit code (1)."""

    code = EXIT_RUNTIME


class UsageError(CLIError):
    """The command line is wrong (exit code 2)."""

    code = EXIT_USAGE


def debug() -> bool:
    """``AGENTSTREAM_DEBUG`` is set to something other than empty/``0``: show tracebacks."""
    return os.environ.get("AGENTSTREAM_DEBUG", "") not in ("", "0")


def missing_extra(exc: ImportError, needed_for: str = "this command") -> CLIError | None:
    """A `CLIError` naming the extra to install when ``exc`` is a missing optional dependency."""
    cause: BaseException | None = exc
    while cause is not None:  # a library may re-raise the ImportError with its own message
        name = getattr(cause, "name", None) or ""
        extra = EXTRAS.get(name.partition(".")[0])
        if extra is not None:
            break
        cause = cause.__cause__
    else:
        return None
    return CLIError(
        f"{needed_for} needs the '{extra}' extra ({name.partition('.')[0]} is not installed): "
        f"pip install 'agentstream[{extra}]'"
    )


def explain(exc: BaseException) -> CLIError | None:
    """The user-facing form of ``exc``, or ``None`` when it is a bug (not the user's mistake)."""
    if isinstance(exc, CLIError):
        return exc
    if isinstance(exc, ImportError):
        return missing_extra(exc)
    from ..models import MissingAPIKeyError, UnknownProviderError

    if isinstance(exc, MissingAPIKeyError):
        return CLIError(str(exc))
    if isinstance(exc, UnknownProviderError):
        return UsageError(str(exc))
    return None


def report(command: str, exc: BaseException, stream: TextIO | None = None) -> int:
    """Print ``exc`` as ``agentstream <command>: ...`` (plus the traceback under debug); the exit code."""
    out = stream or sys.stderr
    error = explain(exc)
    if debug():
        traceback.print_exception(exc, file=out)
    if error is None:
        hint = "" if debug() else " (set AGENTSTREAM_DEBUG=1 for the traceback)"
        message = f"unexpected error: {type(exc).__name__}: {exc}{hint}"
        code = EXIT_RUNTIME
    else:
        message, code = _one_line(str(error)), error.code
    print(f"{command}: {message}", file=out)
    return code


def _one_line(message: str) -> str:
    # newlines only: spaces inside a quoted value (a pattern, a path) are part of it
    return " ".join(line.strip() for line in message.splitlines() if line.strip()) or "failed"
