"""``agentstream`` command line: ``run``, ``serve``, ``smooth``, ``to-ui``.

Each subcommand lives in its own module under ``agentstream._cli`` exposing ``add_parser(subparsers)``
(which registers the subcommand and sets ``func``); ``func(args) -> int`` is the exit code.
Modules are imported lazily so ``agentstream --help`` stays fast and optional extras stay optional.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["main"]

SUBCOMMANDS = ("run", "serve", "smooth", "to_ui")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentstream",
        description="AI agents whose whole life streams as one typed sequence of chunks.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"agentstream._cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"agentstream._cli.{name}":
                raise
            continue
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `agentstream` command line with `argv` (default: `sys.argv[1:]`); returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
