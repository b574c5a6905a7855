"""The chat page turns ``source-url`` parts into links only for http(s) URLs.

A model (or a prompt-injected tool result) choosing ``javascript:`` or ``data:`` URLs must not get a
clickable script into the page. The page's own ``safeHref`` runs in node against hostile URLs, and
the renderer is checked to assign ``href`` only from it.
"""

from __future__ import annotations

import json
import re
import subprocess
from importlib import resources

from tests import _services

PAGE = resources.files("agentstream._web").joinpath("chat.html").read_text(encoding="utf-8")

HOSTILE = [
    "javascript:alert(document.cookie)",
    "  JaVaScRiPt:alert(1)",
    "java\tscript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
    "blob:http://127.0.0.1/x",
    "http://[bad",
]
SAFE = {
    "https://example.com/a?b=c": "https://example.com/a?b=c",
    "http://example.com": "http://example.com/",
    "/docs/page": "http://127.0.0.1:8000/docs/page",
}


def test_safe_href_allows_only_http_and_https() -> None:
    _services.require("node")
    match = re.search(r"^const safeHref = .*$", PAGE, re.MULTILINE)
    assert match, "chat.html defines no safeHref"
    script = (
        'globalThis.location = { href: "http://127.0.0.1:8000/" };\n'
        + match.group(0)
        + "\nconst urls = JSON.parse(process.argv[1]);"
        + "\nprocess.stdout.write(JSON.stringify(urls.map((u) => safeHref(u))));"
    )
    urls = HOSTILE + list(SAFE)
    result = subprocess.run(
        ["node", "-e", script, json.dumps(urls)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    out = dict(zip(urls, json.loads(result.stdout), strict=True))
    assert {url: out[url] for url in HOSTILE} == dict.fromkeys(HOSTILE)
    assert {url: out[url] for url in SAFE} == SAFE


def test_source_links_take_their_href_from_safe_href_only() -> None:
    assignments = re.findall(r"\.href\s*=\s*([^;]+);", PAGE)
    assert assignments == ["href"], assignments
    source = next(line for line in PAGE.splitlines() if 'p.type === "source-url"' in line and "el(" in line)
    assert "const href = safeHref(p.url)" in source and 'rel = "noopener noreferrer"' in source
