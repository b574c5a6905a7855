from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

from agentstream._cli._stdin import read_lines


async def _collect(fd: int) -> list[bytes]:
    return [line async for line in read_lines(fd)]


async def test_lines_of_a_pipe_as_they_arrive() -> None:
    read_end, write_end = os.pipe()
    lines = read_lines(read_end)
    try:
        os.write(write_end, b'{"a": 1}\n{"b"')
        assert await anext(lines) == b'{"a": 1}\n'  # the loop is free while the rest is not there
        pending = asyncio.ensure_future(anext(lines))
        await asyncio.sleep(0)
        assert not pending.done()
        os.write(write_end, b": 2}\nlast")
        assert await pending == b'{"b": 2}\n'
        os.close(write_end)
        assert [line async for line in lines] == [b"last"]
    finally:
        os.close(read_end)


async def test_lines_of_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    body = b"".join(b"line %d\n" % i for i in range(50_000))
    path.write_bytes(body)
    fd = os.open(path, os.O_RDONLY)
    try:
        lines = await _collect(fd)
    finally:
        os.close(fd)
    assert len(lines) == 50_000 and b"".join(lines) == body


async def test_no_thread_is_left_behind() -> None:
    before = threading.active_count()
    read_end, write_end = os.pipe()
    os.write(write_end, b"x\n")
    lines = read_lines(read_end)
    assert await anext(lines) == b"x\n"
    await lines.aclose()  # stop early, input still open
    assert threading.active_count() == before
    os.close(read_end)
    os.close(write_end)
