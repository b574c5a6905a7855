"""The command-line synopsis of every ``agentstream`` command, built from the real parsers.

``docs/cli.md`` and the README's "Command line" hold this text verbatim (a test compares them, so a
new flag cannot go undocumented); ``python -m agentstream._cli._synopsis`` prints it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

__all__ = ["synopsis"]

WIDTH = 100
ORDER = ("run", "serve", "workflow run", "workflow resume", "worker", "cluster", "smooth", "to-ui")
"""Most used first; a command missing here still appears, at the end."""


def _commands(parser: argparse.ArgumentParser, name: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield name, parser
        return
    for action in subs:
        for sub_name, sub in action.choices.items():
            yield from _commands(sub, f"{name} {sub_name}")


def _value(action: argparse.Action) -> str:
    if action.choices is not None and action.metavar is None:
        return "|".join(str(c) for c in action.choices)
    metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    return f"[{metavar}]" if action.nargs == "?" else metavar


def _option(action: argparse.Action) -> str:
    flag = max(action.option_strings, key=len)  # the long spelling
    return flag if action.nargs == 0 else f"{flag} {_value(action)}"


def _tokens(parser: argparse.ArgumentParser) -> list[str]:
    grouped = {id(a): g for g in parser._mutually_exclusive_groups for a in g._group_actions}
    tokens: list[str] = []
    for action in parser._actions:
        if not action.option_strings and action.nargs not in (0, argparse.SUPPRESS):
            tokens.append(_value(action))
    done: set[int] = set()
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction) or id(action) in done:
            continue
        group = grouped.get(id(action))
        members = group._group_actions if group is not None else [action]
        done.update(id(a) for a in members)
        text = " | ".join(_option(a) for a in members)
        tokens.append(text if action.required else f"[{text}]")
    return tokens


def _wrap(head: str, tokens: list[str]) -> str:
    lines, line = [], head
    for token in tokens:
        if len(line) + 1 + len(token) > WIDTH and line.strip() != head.strip():
            lines.append(line)
            line = " " * len(head)
        line += " " + token
    lines.append(line)
    return "\n".join(lines)


def synopsis() -> str:
    """One entry per command (``workflow run`` / ``workflow resume`` each), wrapped at 100 columns."""
    from agentstream.cli import build_parser

    parser = build_parser()
    parser.prog = "agentstream"
    commands = dict(_commands(parser, "agentstream"))
    names = [f"agentstream {n}" for n in ORDER if f"agentstream {n}" in commands]
    names += [n for n in commands if n not in names]
    entries = [_wrap(name, _tokens(commands[name])) for name in names]
    return "\n".join(entries) + "\n"


if __name__ == "__main__":
    print(synopsis(), end="")
