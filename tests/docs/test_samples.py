"""The useChat reply the README and docs/serving.md show is what their ``myapp.py`` answers to their
``curl`` request (ids aside), so the sample cannot drift from the code next to it."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import httpx
import pytest

from ._markdown import ROOT, Block, blocks

_IDS = (
    (re.compile(r'"messageId":"[0-9a-f-]{36}"'), '"messageId":"<uuid>"'),
    (re.compile(r'"toolCallId":"call_[0-9a-f]+"'), '"toolCallId":"call_<id>"'),
)


def _normalised(line: str) -> str:
    for pattern, replacement in _IDS:
        line = pattern.sub(replacement, line)
    return line


def _app_request_and_sample(page: Path) -> tuple[Block, dict[str, object], list[str]]:
    found = blocks(page)
    app = next(b for b in found if b.title == "myapp.py" or b.code.startswith("# myapp.py"))
    curl = next(b for b in found if b.language == "bash" and b.code.startswith("curl -N"))
    sample = next(b for b in found if b.line > curl.line and b.code.startswith("data: "))
    body = re.search(r"-d '(.*)'", curl.code, re.S)
    assert body is not None, f"{curl.where}: no -d '...' body"
    return app, json.loads(body.group(1)), [line for line in sample.code.splitlines() if line]


@pytest.mark.parametrize("page", ["README.md", "docs/serving.md"])
async def test_the_shown_reply_is_what_the_app_answers(page: str, tmp_path: Path) -> None:
    app_block, request, shown = _app_request_and_sample(ROOT / page)
    (tmp_path / "myapp.py").write_text(app_block.code, encoding="utf-8")
    app = runpy.run_path(str(tmp_path / "myapp.py"))["app"]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
        reply = await client.post("/api/chat/assistant", json=request)
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
    actual = [_normalised(line) for line in reply.text.splitlines() if line]
    expected = [_normalised(line) for line in shown]
    if "..." not in expected:
        assert actual == expected
        return
    at = 0  # "..." stands for lines left out: the rest must come in order
    for line in expected:
        if line == "...":
            continue
        assert line in actual[at:], f"{page}: the sample shows {line!r}, which the app does not send"
        at = actual.index(line, at) + 1
