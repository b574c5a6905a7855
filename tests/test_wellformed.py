"""Lone UTF-16 surrogates in JSON (``agentstream._wellformed``, behind ``chunks`` and ``storage``): written byte for byte as node's
``JSON.stringify`` writes them, read back as the same halves, through every chunk encoding
(``encode_chunk``, JSON lines, SSE frames, UI chunks) and through a stored record's copy."""

from __future__ import annotations

import io
import json
import subprocess

import msgspec
import pytest

from agentstream._wellformed import copy_record
from agentstream.ai_sdk import decode_ui_chunk, encode_sse_frame, encode_ui_chunk
from agentstream.chunks import (
    TextDelta,
    TextDeltaPayload,
    decode_chunk,
    dumps_wellformed,
    encode_chunk,
    iter_jsonl,
    loads_wellformed,
    write_jsonl,
)
from tests._services import require

# UTF-16 code units, as a JavaScript string holds them.
CASES: dict[str, list[int]] = {
    "high half alone": [0x78, 0xD83D],
    "low half alone": [0xDE00, 0x79],
    "a pair": [0xD83D, 0xDE00],
    "pair then lone": [0xD83D, 0xDE00, 0xD83D],
    "reversed pair": [0xDE00, 0xD83D],
    "two highs": [0xD800, 0xD800, 0xDFFF],
    "non-ASCII around": [0xE9, 0xD800, 0x4E2D, 0x22, 0x5C, 0x0A, 0x00],
    "the escape spelled out": [0x5C, 0x75, 0x64, 0x38, 0x30, 0x30],
}


def _python(units: list[int]) -> str:
    return "".join(chr(u) for u in units)  # a pair stays two code points, as a sliced str would


@pytest.fixture(scope="module")
def stringified() -> dict[str, bytes]:
    """What node's ``JSON.stringify`` writes for each case (an object holding the string twice)."""
    require("node")
    script = (
        "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "const out = {};"
        "for (const [name, units] of Object.entries(cases)) {"
        "  const s = String.fromCharCode(...units);"
        "  out[name] = Buffer.from(JSON.stringify({type: 'text-delta', delta: s, list: [s, 1]}), 'utf8').toString('base64');"
        "}"
        "process.stdout.write(JSON.stringify(out));"
    )
    done = subprocess.run(
        ["node", "-e", script], input=json.dumps(CASES), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    import base64

    return {name: base64.b64decode(text) for name, text in json.loads(done.stdout).items()}


@pytest.mark.parametrize("name", list(CASES))
def test_the_bytes_are_json_stringify_s(name: str, stringified: dict[str, bytes]) -> None:
    text = _python(CASES[name])
    value = {"type": "text-delta", "delta": text, "list": [text, 1]}
    assert dumps_wellformed(value) == stringified[name]
    assert encode_ui_chunk(value) == stringified[name]
    assert encode_sse_frame(value) == b"data: " + stringified[name] + b"\n\n"


@pytest.mark.parametrize("name", list(CASES))
def test_read_back_as_the_same_halves(name: str, stringified: dict[str, bytes]) -> None:
    # what a JavaScript client sends back parses to the string it held (a pair as its character)
    expected = _python(CASES[name]).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    assert loads_wellformed(stringified[name])["delta"] == expected
    assert decode_ui_chunk(stringified[name])["list"] == [expected, 1]


def test_values_without_surrogates_take_msgspec_s_bytes() -> None:
    value = {"a": "é 中 😀", "b": [1, 2.5, None, True], "c": {"d": "\\u0000"}}
    assert dumps_wellformed(value) == msgspec.json.encode(value)


def test_bad_json_stays_an_error() -> None:
    for bad in (
        b'{"a": "\\ud800"',
        b'["\\ud800", NaN]',
        b'["\\ud800", 1e999]',
        b'["\\udc00", 18446744073709551616]',
        b"[1,]",
    ):
        with pytest.raises(msgspec.DecodeError):
            loads_wellformed(bad)


def test_a_chunk_and_its_json_lines_keep_the_halves() -> None:
    chunk = TextDelta(run_id="r", payload=TextDeltaPayload(id="t", text="cut \ud83d here \ude00"))
    raw = encode_chunk(chunk)
    assert b"\\ud83d" in raw and b"\\ude00" in raw
    assert decode_chunk(raw) == chunk
    out = io.BytesIO()
    write_jsonl([chunk, chunk], out)
    assert list(iter_jsonl(out.getvalue().splitlines())) == [chunk, chunk]


class _Record(msgspec.Struct):
    title: str
    tags: list[str]


def test_a_struct_holding_a_half_is_written_and_copied_with_it() -> None:
    # storage hands structs (records) to the same helper; a struct field is not walked like a dict
    record = _Record(title="x\ud83d", tags=["\ude00y"])
    assert dumps_wellformed(record) == b'{"title":"x\\ud83d","tags":["\\ude00y"]}'
    copy = copy_record(record)
    assert copy == record and copy is not record and copy.tags is not record.tags
