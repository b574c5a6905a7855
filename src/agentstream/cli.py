"""``agentstream`` command line: ``run``, ``serve``, ``smooth``, ``to-ui``, ``worker``, ``workflow``, ``cluster``.

Each subcommand lives in its own module under ``agentstream._cli`` exposing ``add_parser(subparsers)``
(which registers the subcommand and sets ``func``); ``func(args) -> int`` is the exit code.
Modules are imported lazily so ``agentstream --help`` stays fast and optional extras stay optional.

Every error a user can cause ends the same way (``agentstream._cli``): one line
``agentstream <command>: <what is wrong and how to fix it>`` on stderr, exit code 2 for a wrong
command line and 1 otherwise; ``AGENTSTREAM_DEBUG=1`` adds the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from ._cli import Parser, report

__all__ = ["main"]

SUBCOMMANDS = ("cluster", "mcp", "run", "serve", "smooth", "to_ui", "worker", "workflow")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = Parser(
        prog="agentstream",
        description="AI agents whose whole life streams as one typed sequence of chunks.",
    )
    parser.add_argument("--version", action="version", version=f"agentstream {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"agentstream._cli.{name}")
        module.add_parser(subparsers)
    return parser


def _quiet_stdout() -> None:
    """The reader of stdout went away (``| head``): send the rest, and the exit-time flush, nowhere."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - stdout is not a file descriptor
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `agentstream` command line with `argv` (default: `sys.argv[1:]`); returns the exit code."""
    args = build_parser().parse_args(argv)
    command = f"agentstream {args.command}"
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except Exception as exc:
        return report(command, exc)
    return code


if __name__ == "__main__":
    sys.exit(main())
