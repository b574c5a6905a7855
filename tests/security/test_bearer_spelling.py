"""``bearer_token_auth``: which spellings of ``Authorization: Bearer <token>`` pass (issue 22,
item 8; documented in docs/serving.md, "Request checks"). The scheme is case-insensitive (RFC
7235) and spaces around the token are ignored; anything else is a 401."""

from __future__ import annotations

import pytest

from agentstream.server import RequestGuard, bearer_token_auth

from ._support import BODY, CountingModel, app_with, client_for

ACCEPTED = [
    "Bearer s3cret",
    "bearer s3cret",
    "BEARER s3cret",
    "bEaReR s3cret",
    "Bearer    s3cret",
    "Bearer s3cret   ",
]
REFUSED = [
    "",
    "Bearer",
    "Bearer ",
    "Bearer\ts3cret",  # a tab is not the separator
    "Basic s3cret",
    "Bearers3cret",
    "Bearer s3cret2",
    "Bearer s3cre",
    "Bearer s3 cret",
    "Bearer S3CRET",  # the token itself is compared exactly
    "s3cret",
]


@pytest.mark.parametrize("header", ACCEPTED)
async def test_the_scheme_in_any_case_and_extra_spaces_are_accepted(header: str) -> None:
    model = CountingModel()
    async with client_for(app_with(model, RequestGuard(auth=bearer_token_auth("s3cret")))) as client:
        r = await client.post("/api/chat/echo", json=BODY, headers={"authorization": header})
    assert r.status_code == 200, r.text
    assert len(model.prompts) == 1


@pytest.mark.parametrize("header", REFUSED)
async def test_every_other_spelling_is_a_401(header: str) -> None:
    model = CountingModel()
    async with client_for(app_with(model, RequestGuard(auth=bearer_token_auth("s3cret")))) as client:
        r = await client.post("/api/chat/echo", json=BODY, headers={"authorization": header})
    assert r.status_code == 401, header
    assert model.prompts == []
