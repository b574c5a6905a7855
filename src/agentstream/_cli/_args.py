"""Argument parsing shared by the subcommands: a one-line-error parser and checked number types."""

from __future__ import annotations

import argparse
import math
from typing import Any, NoReturn

from ._errors import EXIT_USAGE

__all__ = ["Parser", "milliseconds", "milliseconds_or_none", "positive_count", "positive_seconds"]


class Parser(argparse.ArgumentParser):
    """``argparse`` whose errors are one line, ``agentstream <command>: <error> (see ... --help)``.

    Abbreviations are off (here and so in every subcommand's parser, which argparse builds with
    this class): with them ``run --app x`` was read as ``--approve`` when ``--app`` did not exist,
    and any flag added later could change what an old command line means.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def _number(value: str, allow_none: bool) -> float | None:
    if allow_none and value.strip().lower() in ("none", "null"):
        return None
    alternative = " or 'none'" if allow_none else ""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of milliseconds{alternative}, got {value!r}"
        ) from None
    if not math.isfinite(number) or number < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0{alternative}, got {value!r}")
    return number


def milliseconds(value: str) -> float:
    """``argparse`` type: a finite, non-negative number of milliseconds."""
    number = _number(value, allow_none=False)
    assert number is not None
    return number


def milliseconds_or_none(value: str) -> float | None:
    """``argparse`` type: like `milliseconds`, or ``none`` (no delay)."""
    return _number(value, allow_none=True)


def positive_seconds(value: str) -> float:
    """``argparse`` type: a finite number of seconds > 0 (a limit of 0 s would refuse everyone)."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds > 0, got {value!r}")
    return number


def positive_count(value: str) -> int:
    """``argparse`` type: a whole number >= 1 (connections, bytes)."""
    try:
        number = int(value.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value!r}")
    return number
