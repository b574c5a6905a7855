"""``Segmenter`` (ICU through ``icu4py``) and duck-typed segmenters as ``smooth_stream`` chunking."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from agentstream.chunks import ChunkFrom, TextDelta, TextDeltaPayload
from agentstream.stream import Segment, Segmenter, smooth_stream
from tests import _services
from tests.conformance import load, vector_files

_services.require("icu4py")


def words(text: str, locale: str = "en", granularity: Any = "word") -> list[str]:
    return [s.segment for s in Segmenter(locale, granularity).segment(text)]


def test_japanese_chinese_thai_words() -> None:
    assert words("こんにちは世界", "ja") == ["こんにちは", "世界"]
    assert words("東京タワーに行く", "ja") == ["東京タワー", "に", "行く"]
    assert words("我们今天去北京天安门。你好！", "zh") == [
        "我们",
        "今天",
        "去",
        "北京",
        "天安门",
        "。",
        "你好",
        "！",
    ]
    thai = "สวัสดีครับวันนี้อากาศดี"
    assert words(thai, "th") == ["สวัสดี", "ครับ", "วัน", "นี้", "อากาศ", "ดี"]


def test_emoji_zwj_sequences_are_one_segment() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    rainbow = "\U0001f3f3\ufe0f\u200d\U0001f308"
    assert words(f"{family} family {rainbow} ok") == [family, " ", "family", " ", rainbow, " ", "ok"]
    assert words(f"a{family}e\u0301", granularity="grapheme") == ["a", family, "e\u0301"]


def test_sentences_and_segment_data() -> None:
    assert words("Hi there. How are you? Fine. Bye", granularity="sentence") == [
        "Hi there. ",
        "How are you? ",
        "Fine. ",
        "Bye",
    ]
    segments = list(Segmenter("en", "word").segment("Hello, world"))
    assert segments[0] == Segment("Hello", 0, "Hello, world", True)
    assert segments[1].is_word_like is False
    assert [s.index for s in segments] == [0, 5, 6, 7]
    assert list(Segmenter("en").segment("")) == []


def test_lone_surrogates_are_single_segments() -> None:
    assert words("a\ud83d", granularity="grapheme") == ["a", "\ud83d"]
    assert words("\ude00b", granularity="grapheme") == ["\ude00", "b"]
    assert "".join(words("x \ud83d y")) == "x \ud83d y"


def test_recorded_segmenter_vectors_word_boundaries() -> None:
    """Each recorded segmenter vector drains its buffer per delta: our segments of each delta match."""
    for path in vector_files("smooth"):
        vector = load(path)
        chunking = vector["options"].get("chunking")
        if not (isinstance(chunking, dict) and "segmenter" in chunking):
            continue
        seg = Segmenter(chunking["segmenter"]["locale"], chunking["segmenter"]["granularity"])
        got = [s.segment for c in vector["input"] for s in seg.segment(c["payload"]["text"])]
        assert got == [c["payload"]["text"] for c in vector["expected"]], path.name


def test_invalid_granularity() -> None:
    with pytest.raises(ValueError, match="granularity"):
        Segmenter("en", "paragraph")  # type: ignore[arg-type]


def test_missing_icu_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "icu4py", None)
    monkeypatch.setitem(sys.modules, "icu4py.breakers", None)
    with pytest.raises(ImportError, match=r"pip install 'agentstream\[icu\]'"):
        Segmenter("en")


def td(text: str) -> TextDelta:
    return TextDelta(run_id="r", from_=ChunkFrom.AGENT, payload=TextDeltaPayload(id="t", text=text))


async def run(chunking: Any, deltas: list[str], **kw: Any) -> list[str]:
    async def src() -> AsyncIterator[TextDelta]:
        for d in deltas:
            yield td(d)

    return [c.payload.text async for c in smooth_stream(delay_in_ms=None, chunking=chunking, **kw)(src())]


class StringSegmenter:
    """Duck-typed: yields plain strings (fixed two-character segments)."""

    def segment(self, text: str) -> Iterator[str]:
        for i in range(0, len(text), 2):
            yield text[i : i + 2]


class ObjectSegmenter:
    """Duck-typed like Intl.Segmenter: objects with a ``segment`` attribute."""

    class _S:
        def __init__(self, segment: str) -> None:
            self.segment = segment

    def segment(self, text: str) -> list[Any]:
        if "|" not in text:
            return [self._S("")]
        cut = text.index("|") + 1
        return [self._S(text[:cut]), self._S(text[cut:])]


async def test_duck_typed_segmenters() -> None:
    assert await run(StringSegmenter(), ["abcde"]) == ["ab", "cd", "e"]
    # An empty first segment means "nothing yet" (Mastra's `?.segment || null`): flushed at the end.
    assert await run(ObjectSegmenter(), ["ab", "c|d"]) == ["abc|", "d"]


async def test_segmenter_with_a_call_method_is_still_a_segmenter() -> None:
    class Both(StringSegmenter):
        def __call__(self, buffer: str) -> str:
            raise AssertionError("segment() must win, as in Mastra")

    assert await run(Both(), ["abc"]) == ["ab", "c"]


async def test_hold_back_japanese() -> None:
    ja = Segmenter("ja", "word")
    assert await run(ja, ["東", "京タ", "ワーに行く"]) == ["東", "京", "タ", "ワ", "ー", "に", "行く"]
    assert await run(ja, ["東", "京タ", "ワーに行く"], hold_back=True) == ["東京タワー", "に", "行く"]
