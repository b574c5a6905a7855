"""Every code block of README.md and docs/*.md runs as written, on the offline model.

The blocks of one page run in order in one namespace (a page is read top to bottom: a later snippet
may use the ``agent`` an earlier one defined), in a fresh working directory. Python blocks may use
top-level ``await`` (as in ``python -m asyncio``); ``asyncio.run`` runs on the page's event loop so
objects made by one block can be awaited by the next. ``>>>`` blocks are doctests. ``bash`` blocks
run under ``bash -euo pipefail`` with ``agentstream`` and ``python`` being this checkout's.

Model strings stay as the docs write them (``"openai/gpt-4o-mini"``): ``AGENTSTREAM_OFFLINE=1``
sends every one but ``"demo"`` to the offline model (docs/offline-model.md), here and in the
commands' processes. A block that cannot run offline says why, in a ``<!-- not run: ... -->``
comment right before it (``tests/docs/_markdown.py``).
"""

from __future__ import annotations

import ast
import asyncio
import doctest
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentstream.models import _router
from agentstream.tracing import _settings as _tracing_settings

from ._markdown import ROOT, RUN_LANGUAGES, Block, blocks, doc_files

_FILE_COMMENT = re.compile(r"^#\s*(?:file:\s*)?([\w/]+\.py)\b")


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


def test_every_block_is_run_or_says_why_not() -> None:
    unknown = [
        f"{b.where}: ```{b.language} is neither run nor marked <!-- not run: reason -->"
        for path in doc_files()
        for b in blocks(path)
        if b.not_run is None and b.language not in RUN_LANGUAGES
    ]
    assert not unknown, "\n".join(unknown)
    assert sum(1 for path in doc_files() for b in blocks(path) if b.not_run is None) >= 35


def test_blocks_are_found_with_their_not_run_reasons(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- not run: needs Redis -->\n```python\nx = 1\n```\n\n```python\ny = 2\n```\n"
        "\n```tsx\nconst a = 1;\n```\n",
        encoding="utf-8",
    )
    found = blocks(page)
    assert [(b.language, b.not_run) for b in found] == [
        ("python", "needs Redis"),
        ("python", None),
        ("tsx", "a browser front end: the real `ai` clients run in tests/clients"),
    ]
    assert [b.line for b in found] == [2, 6, 10]


def _run_python(block: Block, namespace: dict[str, Any], loop: asyncio.AbstractEventLoop) -> None:
    if block.code.lstrip().startswith(">>>"):
        test = doctest.DocTestParser().get_doctest(
            block.code, namespace, block.where, str(block.path), block.line
        )
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test, out=lambda text: sys.stdout.write(text))
        assert runner.failures == 0, f"{block.where}: the doctest fails (see the output above)"
        return
    code = compile(block.code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        loop.run_until_complete(result)


def _run_bash(block: Block, cwd: Path) -> None:
    script = (
        "set -euo pipefail\n"
        f'agentstream() {{ "{sys.executable}" -m agentstream "$@"; }}\n'
        f'python() {{ "{sys.executable}" "$@"; }}\n' + block.code
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src") + os.pathsep + str(cwd),
        "AGENTSTREAM_OFFLINE": "1",
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"{block.where}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"


def _file_name(block: Block) -> str | None:
    if block.title:
        return block.title
    first = block.code.lstrip().splitlines()[0] if block.code.strip() else ""
    m = _FILE_COMMENT.match(first)
    return m.group(1) if m else None


@pytest.mark.parametrize("path", doc_files(), ids=_ids(doc_files()))
def test_snippets_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("AGENTSTREAM_OFFLINE", "1")
    monkeypatch.setenv("GATEWAY_KEY", "gateway-key-for-the-docs")  # docs/models.md reads it
    monkeypatch.setenv("CHAT_TOKEN", "chat-token-for-the-docs")  # docs/serving.md reads it
    # process-wide settings a snippet may change (a registered model prefix, global tracing) are
    # put back afterwards, so the pages leave nothing behind for the tests after them
    monkeypatch.setattr(_router, "_factories", dict(_router._factories))
    monkeypatch.setattr(_tracing_settings, "_global", _tracing_settings._global)
    loop = asyncio.new_event_loop()
    monkeypatch.setattr(asyncio, "run", lambda main, **_: loop.run_until_complete(main))
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    try:
        for block in blocks(path):
            if block.not_run is not None:
                continue
            name = _file_name(block)
            if name is not None:  # "myapp.py": the file the next commands import
                (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / name).write_text(block.code, encoding="utf-8")
            if block.language == "python":
                try:
                    _run_python(block, namespace, loop)
                except Exception as exc:
                    raise AssertionError(f"{block.where}: {type(exc).__name__}: {exc}") from exc
            else:
                _run_bash(block, tmp_path)
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
