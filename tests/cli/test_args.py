from __future__ import annotations

import argparse
import io

import pytest

from agentstream._cli._args import milliseconds, milliseconds_or_none
from agentstream._cli._errors import CLIError, UsageError, explain, missing_extra, report
from agentstream.models import MissingAPIKeyError, UnknownProviderError


@pytest.mark.parametrize(("text", "value"), [("0", 0.0), ("10", 10.0), ("2.5", 2.5), ("1e3", 1000.0)])
def test_milliseconds(text: str, value: float) -> None:
    assert milliseconds(text) == value
    assert milliseconds_or_none(text) == value


@pytest.mark.parametrize("text", ["-1", "-0.5", "nan", "inf", "soon", "", "none"])
def test_milliseconds_refuses(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=repr(text)):
        milliseconds(text)


def test_none_means_no_delay() -> None:
    assert milliseconds_or_none("none") is None and milliseconds_or_none("None") is None
    with pytest.raises(argparse.ArgumentTypeError, match="'none'"):
        milliseconds_or_none("-3")


def test_explain_maps_user_errors_and_leaves_bugs_alone() -> None:
    assert isinstance(explain(MissingAPIKeyError("k")), CLIError)
    assert isinstance(explain(UnknownProviderError("p")), UsageError)
    extra = explain(ModuleNotFoundError("No module named 'icu4py'", name="icu4py"))
    assert extra is not None and "pip install 'agentstream[icu]'" in str(extra) and extra.code == 1
    wrapped = ImportError("Segmenter needs ICU")
    wrapped.__cause__ = ModuleNotFoundError("x", name="icu4py")
    assert missing_extra(wrapped) is not None
    assert explain(ModuleNotFoundError("No module named 'other'", name="other")) is None
    assert explain(KeyError("x")) is None


def test_report_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTSTREAM_DEBUG", raising=False)
    out = io.StringIO()
    assert report("agentstream x", UsageError("bad\nthing")) == 2
    assert report("agentstream x", UsageError("bad\n  thing"), out) == 2
    assert out.getvalue() == "agentstream x: bad thing\n"
    out = io.StringIO()
    assert report("agentstream x", KeyError("k"), out) == 1
    assert (
        out.getvalue()
        == "agentstream x: unexpected error: KeyError: 'k' (set AGENTSTREAM_DEBUG=1 for the traceback)\n"
    )
    monkeypatch.setenv("AGENTSTREAM_DEBUG", "1")
    out = io.StringIO()
    try:
        raise CLIError("broken")
    except CLIError as exc:
        assert report("agentstream x", exc, out) == 1
    assert "Traceback" in out.getvalue() and out.getvalue().endswith("agentstream x: broken\n")
