from __future__ import annotations

import agentstream


def test_all_lists_exactly_the_public_names_sorted() -> None:
    public = sorted(
        name for name in vars(agentstream) if not name.startswith("_") and name not in {"annotations"}
    )
    modules = {
        "agent",
        "chunks",
        "stream",
        "tools",
        "models",
        "ai_sdk",
        "server",
        "storage",
        "background",
        "testing",
        "cli",
    }
    assert agentstream.__all__ == sorted(agentstream.__all__)
    assert set(agentstream.__all__) == {name for name in public if name not in modules}
