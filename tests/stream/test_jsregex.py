"""JavaScript RegExp errors say what is wrong (V8's wording) and name the flag."""

from __future__ import annotations

import pytest

from agentstream.stream._jsregex import JSRegexError, js_regex, parse_js_literal


@pytest.mark.parametrize(
    ("source", "flags", "message"),
    [
        ("[", "", "Invalid regular expression: /[/: Unterminated character class"),
        ("a[b", "g", "Invalid regular expression: /a[b/g: Unterminated character class"),
        ("(", "", "Invalid regular expression: /(/: missing )"),
        ("\\", "", "\\ at end of pattern"),
        ("\\u{zz}", "u", "Invalid Unicode escape"),
        ("\\u{110000}", "u", "Invalid Unicode escape"),
        ("\\u{41", "u", "Invalid Unicode escape"),
        ("\\k<name", "", "Invalid named reference"),
        ("\\p{L", "u", "Invalid property name"),
        ("(?<name", "", "Invalid capture group name"),
        ("a", "q", "Invalid flags supplied to RegExp constructor 'q': unknown flag 'q'"),
        ("a", "gx", "unknown flag 'x' (valid flags: d, g, i, m, s, u, v, y)"),
        ("a", "gig", "flag 'g' given twice"),
    ],
)
def test_invalid_patterns_and_flags(source: str, flags: str, message: str) -> None:
    with pytest.raises(JSRegexError) as info:
        js_regex(source, flags)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_literals() -> None:
    pattern = parse_js_literal("/B,/i")
    assert pattern is not None and pattern.search("a, b,c") is not None
    assert parse_js_literal("x") is None and parse_js_literal("/") is None
    assert parse_js_literal("/a/1") is None  # not flags: not a literal
    with pytest.raises(JSRegexError, match="unknown flag 'q'"):
        parse_js_literal("/a/q")
    with pytest.raises(JSRegexError, match="unknown flag 'b'"):
        parse_js_literal("/usr/bin")  # a '/' inside the pattern must be escaped, as in JavaScript


def test_smooth_stream_with_a_bad_literal_names_the_flag() -> None:
    from agentstream.stream import smooth_stream

    with pytest.raises(ValueError, match="unknown flag 'q'"):
        smooth_stream(chunking="/a/q")
