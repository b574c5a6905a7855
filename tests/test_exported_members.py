from __future__ import annotations

import types

import agentstream


def test_all_lists_exactly_the_public_names_sorted() -> None:
    # Subpackages imported on the way are attributes too; everything else public must be in __all__.
    public = {
        name
        for name, value in vars(agentstream).items()
        if not name.startswith("_") and name != "annotations" and not isinstance(value, types.ModuleType)
    }
    assert agentstream.__all__ == sorted(agentstream.__all__)
    assert set(agentstream.__all__) == public
