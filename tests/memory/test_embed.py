"""Embedders: the offline hashed n-grams, and the HTTP providers' requests and answers."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentstream.memory import GoogleEmbedder, HashEmbedder, OpenAIEmbedder, as_embedder
from agentstream.memory._vector import cosine


async def test_hash_embedder_is_deterministic_lexical_and_normalised() -> None:
    embedder = HashEmbedder(dimension=64)
    a, b, c = await embedder.embed(["I love my guitar", "my guitar, I love it", "weather in Oslo"])
    assert a == (await HashEmbedder(dimension=64).embed(["I love my guitar"]))[0]
    assert len(a) == 64 and abs(sum(x * x for x in a) - 1) < 1e-9
    assert cosine(a, b) > 0.6 > cosine(a, c)
    with pytest.raises(ValueError, match="dimension must be an int >= 8"):
        HashEmbedder(dimension=2)


def _mock(handler: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def test_openai_compatible_embeddings_request() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        data = [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]
        return httpx.Response(200, json={"data": data})

    embedder = OpenAIEmbedder(
        "m", api_key="k", base_url="http://local/v1/", dimensions=2, client=_mock(handler)
    )
    assert await embedder.embed(["x", "y"]) == [[1.0, 0.0], [0.0, 1.0]]  # ordered by index
    (request,) = seen
    assert str(request.url) == "http://local/v1/embeddings"
    assert request.headers["authorization"] == "Bearer k"
    assert json.loads(request.content) == {"model": "m", "input": ["x", "y"], "dimensions": 2}


async def test_embedding_http_errors_say_what_failed() -> None:
    embedder = OpenAIEmbedder(api_key="k", client=_mock(lambda r: httpx.Response(401, text="bad key")))
    with pytest.raises(RuntimeError, match="HTTP 401: bad key"):
        await embedder.embed(["x"])


async def test_google_embeddings_request() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path.endswith("/models/gemini-embedding-001:batchEmbedContents")
        assert request.headers["x-goog-api-key"] == "g"
        body = json.loads(request.content)
        assert [r["content"]["parts"][0]["text"] for r in body["requests"]] == ["x"]
        return httpx.Response(200, json={"embeddings": [{"values": [0.5, 0.5]}]})

    assert await GoogleEmbedder(api_key="g", client=_mock(handler)).embed(["x"]) == [[0.5, 0.5]]


async def test_a_callable_is_an_embedder() -> None:
    async def embed(texts: list[str]) -> list[list[int]]:
        return [[len(t)] for t in texts]

    assert await as_embedder(embed).embed(["ab"]) == [[2.0]]
    with pytest.raises(TypeError, match="embedder must be"):
        as_embedder(42)  # type: ignore[arg-type]
