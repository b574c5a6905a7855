"""What a ``@tool`` function's docstring tells the model: its description and its parameters'.

Parsed with griffe (as pydantic-ai does), whose ``auto`` parser recognises Google (``Args:``),
NumPy (``Parameters`` / ``----------``) and Sphinx (``:param x:``) styles.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import griffe

__all__ = ["ToolDoc", "parse_tool_doc"]


@dataclass(frozen=True)
class ToolDoc:
    """The tool description (the docstring's first paragraph) and each parameter's description."""

    description: str
    parameters: dict[str, str] = field(default_factory=dict)


@contextmanager
def _quiet_griffe() -> Iterator[None]:
    # griffe warns about every parameter without a type in the docstring: noise for a tool
    logger = logging.getLogger("griffe")
    previous = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = previous


def parse_tool_doc(func: Callable[..., Any]) -> ToolDoc:
    """``func``'s description and parameter descriptions (empty when it has no docstring)."""
    doc = inspect.getdoc(func)
    if not doc:
        return ToolDoc("")
    with _quiet_griffe():
        sections = griffe.Docstring(doc, lineno=1).parse("auto")
    text = ""
    parameters: dict[str, str] = {}
    for section in sections:
        if section.kind is griffe.DocstringSectionKind.text and not text:
            text = str(section.value)
        elif section.kind is griffe.DocstringSectionKind.parameters:
            for param in section.value:
                if param.description:
                    parameters[param.name] = " ".join(param.description.split())
    return ToolDoc(text.strip().split("\n\n", 1)[0].strip(), parameters)
