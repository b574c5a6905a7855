"""``smooth_stream`` unit tests: Mastra's own test cases, API shape, JS regex/whitespace, surrogates, errors."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest

from agentstream.chunks import (
    ChunkFrom,
    Finish,
    ReasoningDelta,
    ReasoningDeltaPayload,
    ResponseMetadata,
    TextDelta,
    TextDeltaPayload,
    TextEnd,
    TextStart,
    ToolCall,
    decode_chunk,
)
from agentstream.stream import (
    SmoothStream,
    compose_transforms,
    js_regex,
    smooth_stream,
    smooth_stream_factory,
)
from agentstream.stream._chunkers import EMPTY_DETECTION, EMPTY_MATCH, INVALID_CHUNKING, NOT_A_PREFIX
from tests import _services


def td(text: str, id: str = "text-1", **kw: Any) -> TextDelta:
    pm = kw.pop("provider_metadata", None)
    return TextDelta(
        run_id="run-1",
        from_=ChunkFrom.AGENT,
        payload=TextDeltaPayload(id=id, text=text, provider_metadata=pm),
        **kw,
    )


def rd(text: str, id: str = "reasoning-1") -> ReasoningDelta:
    return ReasoningDelta(
        run_id="run-1", from_=ChunkFrom.AGENT, payload=ReasoningDeltaPayload(id=id, text=text)
    )


def wire(d: dict[str, Any]) -> Any:
    return decode_chunk({"runId": "run-1", "from": "AGENT", **d})


async def aiter_of(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


async def collect(transform: Any, items: Iterable[Any]) -> list[Any]:
    return [c async for c in transform(aiter_of(items))]


def texts(chunks: list[Any]) -> list[str]:
    return [c.payload.text for c in chunks if c.type in ("text-delta", "reasoning-delta")]


# --- Mastra's smooth-stream.test.ts (spec §2.5) ------------------------------------------------


async def test_word_chunks_across_deltas() -> None:
    start = wire({"type": "text-start", "payload": {"id": "text-1"}})
    end = wire({"type": "text-end", "payload": {"id": "text-1"}})
    out = await collect(smooth_stream(delay_in_ms=None), [start, td("Hel"), td("lo world"), end])
    assert [c.type for c in out] == ["text-start", "text-delta", "text-delta", "text-end"]
    assert texts(out) == ["Hello ", "world"]
    assert out[0] is start and out[-1] is end


async def test_line_regex_detector_and_segmenter_cases() -> None:
    assert texts(await collect(smooth_stream(delay_in_ms=None), [td("one two three ")])) == [
        "one ",
        "two ",
        "three ",
    ]
    line = smooth_stream(delay_in_ms=None, chunking="line")
    assert texts(await collect(line, [td("first\nsecond\nthird")])) == ["first\n", "second\n", "third"]
    comma = smooth_stream(delay_in_ms=None, chunking=js_regex(r"[^,]*,\s*"))
    assert texts(await collect(comma, [td("first, second, third")])) == ["first, ", "second, ", "third"]

    def sentences(b: str) -> str | None:
        i = b.find(". ")
        return None if i == -1 else b[: i + 2]

    det = smooth_stream(delay_in_ms=None, chunking=sentences)
    assert texts(await collect(det, [td("First. Second. Final")])) == ["First. ", "Second. ", "Final"]


async def test_reasoning_and_text_buffers_are_separate() -> None:
    out = await collect(
        smooth_stream(delay_in_ms=None), [rd("first"), rd(" second", "reasoning-2"), td("answer")]
    )
    assert [(c.type, c.payload.id, c.payload.text) for c in out] == [
        ("reasoning-delta", "reasoning-1", "first"),
        ("reasoning-delta", "reasoning-2", " second"),
        ("text-delta", "text-1", "answer"),
    ]


async def test_non_text_chunks_flush_and_pass_through_as_the_same_object() -> None:
    call = wire({"type": "tool-call", "payload": {"toolCallId": "c", "toolName": "t", "args": {}}})
    finish = wire(
        {
            "type": "finish",
            "payload": {
                "stepResult": {"reason": "stop", "warnings": [], "isContinued": False},
                "output": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}},
                "metadata": {},
            },
        }
    )
    meta = wire({"type": "response-metadata", "payload": {"id": "r"}})
    assert isinstance(call, ToolCall) and isinstance(finish, Finish) and isinstance(meta, ResponseMetadata)
    out = await collect(
        smooth_stream(delay_in_ms=None), [td("before tool"), call, td("before finish"), finish, meta]
    )
    assert texts(out) == ["before ", "tool", "before ", "finish"]
    assert out[2] is call and out[5] is finish and out[6] is meta


async def test_metadata_rides_once() -> None:
    first = td(
        "one two ", metadata={"source": "model"}, provider_metadata={"test": {"signature": "signature-1"}}
    )
    out = await collect(smooth_stream(delay_in_ms=None), [first])
    assert out[0].metadata == {"source": "model"}
    assert out[0].payload.provider_metadata == {"test": {"signature": "signature-1"}}
    assert out[1] == td("two ")


async def test_empty_delta_kept_only_with_metadata() -> None:
    start = wire({"type": "text-start", "payload": {"id": "text-1"}})
    end = wire({"type": "text-end", "payload": {"id": "text-1"}})
    meta = {"google": {"thoughtSignature": "sig-abc"}}
    out = await collect(smooth_stream(delay_in_ms=None), [start, td("", provider_metadata=meta), end])
    assert [c.type for c in out] == ["text-start", "text-delta", "text-end"]
    assert out[1].payload.text == "" and out[1].payload.provider_metadata == meta
    out = await collect(smooth_stream(delay_in_ms=None), [start, td(""), end])
    assert [c.type for c in out] == ["text-start", "text-end"]
    assert isinstance(start, TextStart) and isinstance(end, TextEnd)


@pytest.mark.parametrize(
    ("detector", "message"),
    [(lambda b: "", EMPTY_DETECTION), (lambda b: "different", NOT_A_PREFIX)],
)
async def test_detector_errors(detector: Any, message: str) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        await collect(smooth_stream(delay_in_ms=None, chunking=detector), [td("some text")])


async def test_empty_regex_match_error() -> None:
    with pytest.raises(TypeError, match=re.escape(EMPTY_MATCH)):
        await collect(smooth_stream(delay_in_ms=None, chunking=js_regex("^")), [td("x")])


async def test_delay_after_each_piece_none_on_flush() -> None:
    events: list[Any] = []

    async def sleep(s: float) -> None:
        events.append(("sleep", s))

    async for chunk in smooth_stream(delay_in_ms=20, sleep=sleep)(aiter_of([td("one two "), td("three")])):
        events.append(chunk.payload.text)
    assert events == ["one ", ("sleep", 0.02), "two ", ("sleep", 0.02), "three"]


async def test_zero_delay_still_sleeps() -> None:
    calls: list[float] = []

    async def sleep(s: float) -> None:
        calls.append(s)

    await collect(smooth_stream(delay_in_ms=0, sleep=sleep), [td("a b ")])
    assert calls == [0, 0]


# --- API -----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [None, "", "WORD", "sentence", "constructor", 42, {}, b"x", re.compile(b"x")])
def test_invalid_chunking_raises_at_construction(bad: Any) -> None:
    with pytest.raises(TypeError, match=re.escape(INVALID_CHUNKING)):
        smooth_stream(chunking=bad)
    with pytest.raises(TypeError, match=re.escape(INVALID_CHUNKING)):
        smooth_stream_factory(chunking=bad)


@pytest.mark.parametrize("bad", [-1, float("nan"), "10", True])
def test_invalid_delay(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        smooth_stream(delay_in_ms=bad)


async def test_transform_is_single_use_factory_is_not() -> None:
    transform = smooth_stream(delay_in_ms=None)
    assert isinstance(transform, SmoothStream)
    await collect(transform, [td("a ")])
    with pytest.raises(RuntimeError, match="already used"):
        transform(aiter_of([]))
    factory = smooth_stream_factory(delay_in_ms=None)
    for _ in range(2):
        assert texts(await collect(factory(), [td("Hel"), td("lo world ")])) == ["Hello ", "world "]


async def test_compose_transforms_in_order() -> None:
    words = smooth_stream_factory(delay_in_ms=None)
    chars = smooth_stream_factory(delay_in_ms=None, chunking=lambda b: b[:1] if b else None)
    transform = compose_transforms([words, chars])
    assert texts([c async for c in transform(aiter_of([td("ab c")]))]) == ["a", "b", " ", "c"]
    single = compose_transforms(words)
    assert texts([c async for c in single(aiter_of([td("ab c")]))]) == ["ab ", "c"]
    identity = compose_transforms(None)
    assert texts([c async for c in identity(aiter_of([td("ab c")]))]) == ["ab c"]


async def test_js_literal_string_and_python_patterns() -> None:
    out = await collect(smooth_stream(delay_in_ms=None, chunking="/AND\\s*/i"), [td("salt and pepper")])
    assert texts(out) == ["salt and ", "pepper"]
    out = await collect(smooth_stream(delay_in_ms=None, chunking=re.compile(r"\d+")), [td("ab12cd3e")])
    assert texts(out) == ["ab12", "cd3", "e"]


# --- JavaScript semantics --------------------------------------------------------------------


async def test_word_uses_javascript_whitespace() -> None:
    # U+FEFF is JS whitespace; U+0085 and U+001C-U+001F are not (Python's str.isspace says the opposite).
    out = await collect(smooth_stream(delay_in_ms=None), [td("a\ufeffb\x85c\x1cd e")])
    assert texts(out) == ["a\ufeff", "b\x85c\x1cd ", "e"]
    out = await collect(smooth_stream(delay_in_ms=None, chunking="line"), [td("a\u2028b\rc\n\nd")])
    assert texts(out) == ["a\u2028b\rc\n\n", "d"]


@pytest.mark.parametrize(
    ("source", "flags", "text", "match"),
    [
        (r"\s", "", "a\ufeffb", "\ufeff"),
        (r"\s", "", "a\x85b", None),
        (r"[\s,]+", "", "a\ufeff,b", "\ufeff,"),
        (r"[^\S]", "", "a\u3000", "\u3000"),
        (r"\d+", "", "x\u0663\u0664 12", "12"),
        (r"\w+", "", "été ok", "t"),
        (r"a$", "", "a\n", None),
        (r"a$", "m", "a\nb", "a"),
        (r"^b", "m", "a\rb", "b"),
        (r"^b", "", "a\nb", None),
        (r"a.b", "", "a\rb a-b", "a-b"),
        (r"a.b", "s", "a\rb", "a\rb"),
        (r"\S+\s+", "y", " x y", None),
        (r"\S+\s+", "g", " x y", "x "),
        (r"\p{Lu}+", "u", "abcDEf", "DE"),
        (r"(?<q>['\"]).*?\k<q>", "", "say 'hi' ok", "'hi'"),
        (r"\u{1F600}", "u", "a😀", "😀"),
        (r"\ud83d\ude00", "u", "a😀", "😀"),
        (r"[^]", "", "\n", "\n"),
        (r"\bis\b", "", "this is", "is"),
        (r"\/", "", "a/b", "/"),
    ],
)
def test_js_regex_translation(source: str, flags: str, text: str, match: str | None) -> None:
    m = js_regex(source, flags).search(text)
    assert (m.group() if m else None) == match


def test_js_regex_rejects_bad_flags() -> None:
    with pytest.raises(ValueError, match="Invalid flags"):
        js_regex("a", "gx")


# --- strings ---------------------------------------------------------------------------------


@pytest.mark.parametrize("chunking", ["word", "line", "grapheme", "/x/"])
async def test_surrogate_pair_split_across_deltas_is_joined(chunking: str) -> None:
    out = await collect(
        smooth_stream(delay_in_ms=None, chunking=chunking, hold_back=True), [td("a \ud83d"), td("\ude00 b")]
    )
    joined = "".join(texts(out))
    assert joined == "a \U0001f600 b"
    assert all(not ("\ud800" <= ch <= "\udfff") for ch in joined)


async def test_lone_surrogates_stay_single_characters() -> None:
    out = await collect(smooth_stream(delay_in_ms=None, chunking="grapheme"), [td("a\udc00\ud83d")])
    assert texts(out) == ["a", "\udc00", "\ud83d"]


# --- malformed input and upstream errors -----------------------------------------------------


async def test_upstream_error_flushes_buffer_then_raises() -> None:
    async def source() -> AsyncIterator[Any]:
        yield td("Hello wor")
        raise ConnectionError("upstream broke")

    out: list[Any] = []
    with pytest.raises(ConnectionError):
        async for chunk in smooth_stream(delay_in_ms=None)(source()):
            out.append(chunk)
    assert texts(out) == ["Hello ", "wor"]


@pytest.mark.parametrize(
    ("chunk", "field"),
    [
        (TextDelta(run_id="r", payload=None), "'payload'"),  # type: ignore[arg-type]
        (TextDelta(run_id="r", payload=TextDeltaPayload(id="text-1", text=42)), "'payload.text'"),  # type: ignore[arg-type]
        (TextDelta(run_id="r", payload=TextDeltaPayload(id=None, text="x")), "'payload.id'"),  # type: ignore[arg-type]
    ],
)
@pytest.mark.parametrize("delay", [None, 0])
async def test_malformed_delta_names_the_field(chunk: Any, field: str, delay: float | None) -> None:
    out: list[Any] = []
    with pytest.raises(TypeError, match=re.escape(field)):
        async for c in smooth_stream(delay_in_ms=delay)(aiter_of([td("kept te"), chunk, td("never")])):
            out.append(c)
    assert "".join(texts(out)) == "kept te"


# --- linear time -----------------------------------------------------------------------------


@pytest.mark.parametrize("chunking", ["word", "line"])
@pytest.mark.parametrize("char", ["a", "\u6f22"])
async def test_whitespace_free_text_is_linear(chunking: str, char: str) -> None:
    n = 200_000
    text = char * n
    deltas = [td(text[i : i + 4]) for i in range(0, n, 4)]
    # No timed assertion (bench/bench_smooth.py reports the time); a quadratic scan would make
    # this case run for minutes instead of a fraction of a second.
    out = await collect(smooth_stream(delay_in_ms=None, chunking=chunking), [*deltas, td(" x", id="other")])
    assert texts(out) == [text, " x"]


async def test_one_huge_delta_with_segmenter_is_linear() -> None:
    _services.require("icu4py")
    from agentstream.stream import Segmenter

    text = "こんにちは世界。" * 5_000
    out = await collect(smooth_stream(delay_in_ms=None, chunking=Segmenter("ja", "word")), [td(text)])
    assert "".join(texts(out)) == text
    assert texts(out)[:3] == ["こんにちは", "世界", "。"]


async def test_early_close_cancels_reader_and_closes_upstream() -> None:
    closed = asyncio.Event()

    async def source() -> AsyncIterator[Any]:
        try:
            for i in range(1000):
                yield td(f"w{i} ")
                await asyncio.sleep(0)
        finally:
            closed.set()

    for delay in (0, None):
        closed.clear()
        stream: Any = smooth_stream(delay_in_ms=delay)(source())
        got = [await stream.__anext__(), await stream.__anext__()]
        assert texts(got) == ["w0 ", "w1 "]
        await stream.aclose()
        assert closed.is_set()
        assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_pipe_through_and_experimental_transform_shapes() -> None:
    from agentstream.stream import ChunkStream, apply_transforms

    piped = ChunkStream(aiter_of([td("Hel"), td("lo world ")])).pipe_through(smooth_stream(delay_in_ms=None))
    assert texts([c async for c in piped]) == ["Hello ", "world "]
    factory = smooth_stream_factory(delay_in_ms=None)
    for factories in (factory, [factory, factory]):
        stream = apply_transforms(aiter_of([td("Hel"), td("lo world ")]), factories)
        assert texts([c async for c in stream]) == ["Hello ", "world "]


async def test_non_string_detector_result_is_mastras_error() -> None:
    with pytest.raises(TypeError, match=re.escape(EMPTY_DETECTION)):
        await collect(smooth_stream(delay_in_ms=None, chunking=lambda b: 3), [td("abc")])


class _DictWords:
    """``Intl.Segmenter``'s segment data as dicts (``{"segment", "index", "input", "isWordLike"}``)."""

    def segment(self, text: str) -> Iterable[dict[str, Any]]:
        index = 0
        for piece in re.findall(r"\S+|\s+", text):
            yield {"segment": piece, "index": index, "input": text, "isWordLike": not piece.isspace()}
            index += len(piece)


async def test_a_segmenter_of_dicts_is_recognised() -> None:
    out = await collect(smooth_stream(delay_in_ms=None, chunking=_DictWords()), [td("one two"), td(" three")])
    # Each segment comes out as soon as it is known, not the whole text at the end.
    assert texts(out) == ["one", " ", "two", " ", "three"]


async def test_a_segment_without_text_is_a_clear_error() -> None:
    class Bad:
        def segment(self, text: str) -> Iterable[Any]:
            yield {"text": text}

    with pytest.raises(
        TypeError, match=r"segmenter segments must be strings, objects with a 'segment' string"
    ):
        await collect(smooth_stream(delay_in_ms=None, chunking=Bad()), [td("one two")])

    class Numbers:
        def segment(self, text: str) -> Iterable[Any]:
            yield {"segment": 3}

    with pytest.raises(TypeError, match="got dict whose 'segment' is int"):
        await collect(smooth_stream(delay_in_ms=None, chunking=Numbers()), [td("one two")])
