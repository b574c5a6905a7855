"""``@tool`` descriptions from docstrings: Google, NumPy and Sphinx styles via griffe."""

from __future__ import annotations

from typing import Annotated, Any

import pydantic
import pytest

from agentstream.tools import tool


def google(city: str, days: int = 3) -> str:
    """Get the weather forecast.

    Uses the national weather service.

    Args:
        city: The city name.
        days: How many days
            to forecast.

    Returns:
        The forecast.
    """
    return city


def numpy(city: str, days: int = 3) -> str:
    """Get the weather forecast.

    Parameters
    ----------
    city : str
        The city name.
    days : int
        How many days to forecast.
    """
    return city


def sphinx(city: str, days: int = 3) -> str:
    """Get the weather forecast.

    :param city: The city name.
    :param days: How many days to forecast.
    :returns: The forecast.
    """
    return city


@pytest.mark.parametrize("func", [google, numpy, sphinx], ids=["google", "numpy", "sphinx"])
def test_parameter_descriptions_reach_the_schema(func: Any) -> None:
    t = tool(func)
    assert t.description == "Get the weather forecast."
    props = t.definition()["inputSchema"]["properties"]
    assert props["city"]["description"] == "The city name."
    assert props["days"]["description"] == "How many days to forecast."
    assert t.validation_error({"city": "Oslo"})[1] is None


def test_an_explicit_field_description_wins_and_undocumented_parameters_have_none() -> None:
    @tool
    def search(
        query: Annotated[str, pydantic.Field(description="explicit", min_length=1)], limit: int = 5
    ) -> str:
        """Search.

        Args:
            query: From the docstring.
        """
        return query

    props = search.definition()["inputSchema"]["properties"]
    assert props["query"]["description"] == "explicit"
    assert props["query"]["minLength"] == 1
    assert "description" not in props["limit"]
    _, err = search.validation_error({"query": ""})
    assert err is not None and "- query: Too small: expected string to have >=1 characters" in err["message"]


def test_no_docstring_and_an_explicit_description() -> None:
    @tool(description="Given.")
    def bare(x: int) -> int:
        return x

    assert bare.description == "Given."
    assert "description" not in bare.definition()["inputSchema"]["properties"]["x"]

    @tool
    def undocumented(x: int) -> int:
        return x

    assert undocumented.description == ""


def test_griffe_warnings_stay_quiet(caplog: pytest.LogCaptureFixture) -> None:
    tool(sphinx)
    assert not [r for r in caplog.records if r.name.startswith("griffe")]
