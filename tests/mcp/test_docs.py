"""docs/mcp.md's examples run as written: ``# file: NAME`` blocks are written to a temporary folder
(the cwd), every other Python block runs there in order, top-level ``await`` allowed."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


async def test_the_mcp_page_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = BLOCK.findall(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    src = str(Path(__file__).resolve().parents[2] / "src")
    # The stdio servers the examples launch get the SDK's minimal environment (no PYTHONPATH), so
    # `sys.executable` is a wrapper that runs this checkout's sources, as an installed package would.
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{src}" exec "{sys.executable}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(wrapper))
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict[str, Any] = {"__name__": "docs_mcp"}
    for block in blocks:
        first = block.splitlines()[0]
        if first.startswith("# file: "):
            (tmp_path / first.removeprefix("# file: ").strip()).write_text(block, encoding="utf-8")
            continue
        code = compile(block, str(DOC), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        outcome = eval(code, namespace)  # the page's own examples
        if outcome is not None:
            await outcome
    sys.modules.pop("weather_mcp", None)
