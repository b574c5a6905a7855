"""``agentstream mcp serve``: what it accepts as ``--app`` and how it refuses the rest."""

from __future__ import annotations

import pytest

from agentstream._cli._errors import UsageError
from agentstream._cli.mcp import load_server
from agentstream.cli import main
from agentstream.mcp import MCPServer


def test_a_missing_module_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "serve", "--app", "no_such_module_here:x"]) == 2
    assert "no module named 'no_such_module_here'" in capsys.readouterr().err


def test_a_value_of_the_wrong_kind_names_what_is_expected() -> None:
    with pytest.raises(
        UsageError, match=r"json:dumps is a function; expected an MCPServer, a Mastra, an Agent"
    ):
        load_server("json:dumps")


def test_an_mcp_server_is_served_as_it_is() -> None:
    server = load_server("tests.mcp.oracle_app:server")
    assert isinstance(server, MCPServer)
    assert [t.name for t in server.tool_definitions()][-2:] == ["ask_helper", "run_double"]
