"""Embedders for semantic recall: the ``Embedder`` protocol, an offline one that ships with the
package (``HashEmbedder``), OpenAI / OpenAI-compatible embeddings over HTTP (``OpenAIEmbedder``)
and plain callables (``as_embedder``)."""

from __future__ import annotations

import hashlib
import inspect
import math
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Embedder", "FastEmbedEmbedder", "GoogleEmbedder", "HashEmbedder", "OpenAIEmbedder", "as_embedder"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one fixed dimension (``dimension``; ``None`` until known)."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (all of one dimension)."""
        ...


class HashEmbedder:
    """Offline, deterministic and **lexical only**: hashed character n-grams (3–5 of each
    lowercased word, with word boundaries) counted into ``dimension`` buckets, L2-normalised.

    Texts that share words or word pieces come out similar; synonyms and paraphrases do not. Good
    for tests, demos and offline development; use a real model (``OpenAIEmbedder``, fastembed) for
    meaning.
    """

    def __init__(self, dimension: int = 256, *, ngrams: tuple[int, int] = (3, 5)) -> None:
        if not isinstance(dimension, int) or dimension < 8:
            raise ValueError(f"HashEmbedder dimension must be an int >= 8, got {dimension!r}")
        low, high = ngrams
        if not 1 <= low <= high:
            raise ValueError(f"HashEmbedder ngrams must be (low, high) with 1 <= low <= high, got {ngrams!r}")
        self.dimension = dimension
        self.ngrams = (low, high)

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for word in re.findall(r"\w+", text.lower()):
            padded = f"<{word}>"
            for n in range(self.ngrams[0], self.ngrams[1] + 1):
                for i in range(max(1, len(padded) - n + 1)):
                    gram = padded[i : i + n]
                    digest = hashlib.blake2b(gram.encode(), digest_size=8).digest()
                    bucket = int.from_bytes(digest[:4], "little") % self.dimension
                    sign = 1.0 if digest[4] & 1 else -1.0
                    vector[bucket] += sign
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (all of one dimension)."""
        return [self._one(t) for t in texts]


class OpenAIEmbedder:
    """``POST {base_url}/embeddings`` (OpenAI, or any OpenAI-compatible server: vLLM, Ollama,
    LM Studio, Azure-compatible gateways). ``api_key`` defaults to ``$OPENAI_API_KEY``."""

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        api_key: str | None = None,
        base_url: str = "https://api.openai.com/v1",
        dimensions: int | None = None,
        timeout: float = 30.0,
        client: Any = None,
    ) -> None:
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.base_url = base_url.rstrip("/")
        self.dimension = dimensions
        self.timeout = timeout
        self._client = client

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (all of one dimension)."""
        import httpx

        if not texts:
            return []
        body: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self.dimension is not None:
            body["dimensions"] = self.dimension
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        client = self._client or httpx.AsyncClient(timeout=self.timeout)
        try:
            response = await client.post(f"{self.base_url}/embeddings", json=body, headers=headers)
        finally:
            if self._client is None:
                await client.aclose()
        if response.status_code >= 400:
            raise RuntimeError(
                f"embeddings request to {self.base_url} failed with HTTP {response.status_code}: {response.text[:500]}"
            )
        data = sorted(response.json()["data"], key=lambda d: d["index"])
        return [[float(x) for x in d["embedding"]] for d in data]


class GoogleEmbedder:
    """Gemini embeddings over HTTP (``models/{model}:batchEmbedContents``); ``api_key`` defaults
    to ``$GOOGLE_GENERATIVE_AI_API_KEY`` (the AI SDK's variable) or ``$GEMINI_API_KEY``."""

    def __init__(
        self,
        model: str = "gemini-embedding-001",
        *,
        api_key: str | None = None,
        base_url: str = "https://generativelanguage.googleapis.com/v1beta",
        dimensions: int | None = None,
        timeout: float = 30.0,
        client: Any = None,
    ) -> None:
        self.model = model
        self.api_key = (
            api_key
            if api_key is not None
            else os.environ.get("GOOGLE_GENERATIVE_AI_API_KEY") or os.environ.get("GEMINI_API_KEY")
        )
        self.base_url = base_url.rstrip("/")
        self.dimension = dimensions
        self.timeout = timeout
        self._client = client

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (all of one dimension)."""
        import httpx

        if not texts:
            return []
        if not self.api_key:
            raise RuntimeError(
                "GoogleEmbedder needs an API key: api_key=... or $GOOGLE_GENERATIVE_AI_API_KEY"
            )
        name = f"models/{self.model}"
        requests = []
        for text in texts:
            item: dict[str, Any] = {"model": name, "content": {"parts": [{"text": text}]}}
            if self.dimension is not None:
                item["outputDimensionality"] = self.dimension
            requests.append(item)
        client = self._client or httpx.AsyncClient(timeout=self.timeout)
        try:
            response = await client.post(
                f"{self.base_url}/{name}:batchEmbedContents",
                json={"requests": requests},
                headers={"x-goog-api-key": self.api_key},
            )
        finally:
            if self._client is None:
                await client.aclose()
        if response.status_code >= 400:
            raise RuntimeError(
                f"embeddings request to {self.base_url} failed with HTTP {response.status_code}: {response.text[:500]}"
            )
        return [[float(x) for x in e["values"]] for e in response.json()["embeddings"]]


class FastEmbedEmbedder:
    """A local ONNX model through ``fastembed`` (``pip install agentstream[fastembed]``), e.g.
    ``BAAI/bge-small-en-v1.5`` (384 dimensions). The model is downloaded into fastembed's cache
    on first use and loaded once; embedding runs in a worker thread, off the event loop."""

    def __init__(
        self, model: str = "BAAI/bge-small-en-v1.5", *, cache_dir: str | None = None, **options: Any
    ):
        self.model = model
        self.cache_dir = cache_dir
        self.options = options
        self.dimension: int | None = None
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            try:
                from fastembed import TextEmbedding  # type: ignore[import-not-found, unused-ignore]
            except ImportError as exc:
                raise ImportError("FastEmbedEmbedder needs: pip install 'agentstream[fastembed]'") from exc
            self._model = TextEmbedding(model_name=self.model, cache_dir=self.cache_dir, **self.options)
        return self._model

    def _embed(self, texts: list[str]) -> list[list[float]]:
        out = [[float(x) for x in vector] for vector in self._load().embed(texts)]
        if out:
            self.dimension = len(out[0])
        return out

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (all of one dimension)."""
        import asyncio

        return await asyncio.to_thread(self._embed, list(texts))


class _CallableEmbedder:
    def __init__(self, fn: Callable[[list[str]], Any]) -> None:
        self._fn = fn

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (all of one dimension)."""
        out = self._fn(list(texts))
        if inspect.isawaitable(out):
            out = await out
        return [[float(x) for x in v] for v in out]


def as_embedder(value: Embedder | Callable[[list[str]], list[list[float]] | Awaitable[Any]]) -> Embedder:
    """An ``Embedder``, or a (sync or async) callable ``texts -> vectors`` wrapped as one."""
    if isinstance(value, Embedder):
        return value
    if callable(value):
        return _CallableEmbedder(value)
    raise TypeError(f"embedder must be an Embedder or a callable texts -> vectors, got {value!r}")
