"""The fenced code blocks of the Markdown docs, and what the snippet tests do with each.

A block is run unless its language is one that is not code to run (``text``: output and synopses;
``tsx`` / ``ts``: a browser front end, run by the real ``ai`` clients in tests/clients) or an HTML
comment right before it says why not: ``<!-- not run: needs PostgreSQL and Redis -->``. The comment
is invisible on the site and on GitHub, and the tests refuse a block that is neither run nor given a
reason, so a new snippet is either tested or argued.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ROOT", "Block", "blocks", "doc_files"]

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.+?)\s*-->", re.S)
NOT_CODE = {
    "": "a synopsis or output, not code",
    "text": "a synopsis or output, not code",
    "tsx": "a browser front end: the real `ai` clients run in tests/clients",
    "ts": "a browser front end: the real `ai` clients run in tests/clients",
}
RUN_LANGUAGES = ("python", "bash", "sh")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language and title, its code, and why it is not run."""

    path: Path
    line: int
    language: str
    title: str | None
    code: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def doc_files() -> list[Path]:
    """README.md and every page in docs/ (not the generated API reference)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path``, in order (blocks indented inside list items included)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        indent, fence, info = m.group("indent"), m.group("fence"), m.group("info").strip()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            line = lines[i]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1
        language = info.split()[0] if info else ""
        title = re.search(r'title="([^"]+)"', info)
        before = "\n".join(lines[max(0, start - 3) : start])
        reason = _NOT_RUN.findall(before)
        not_run = reason[-1] if reason and before.rstrip().endswith("-->") else NOT_CODE.get(language)
        out.append(
            Block(
                path, start + 1, language, title.group(1) if title else None, "\n".join(body) + "\n", not_run
            )
        )
    return out
