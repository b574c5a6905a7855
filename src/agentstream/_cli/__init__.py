"""The ``agentstream`` subcommands, and the one path every user mistake takes to stderr."""

from ._args import Parser
from ._errors import report

__all__ = ["Parser", "report"]
