"""Vertex AI: a recorded Vertex stream, with a real service-account OAuth flow on loopback.

The token endpoint and the model endpoint are one loopback server: google-auth signs a JWT with the
service account's key (made here), exchanges it for an access token, and the model call carries that
token. The stream's facts are asserted in tests/models/test_google.py (same wire format); here, the
address, the credential and that the token is fetched only when it is missing or expired.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import parse_qs

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from agentstream.models import MissingAPIKeyError, resolve_model
from agentstream.models._vertex import VertexModel, vertex_base_url

from .conftest import ReplayServer, Reply, load

NAME = "google-vertex/flex-tier-text-stream.json"
TOKEN = '{"access_token": "ya29.loopback-token", "expires_in": 3600, "token_type": "Bearer"}'


def _service_account(token_uri: str) -> tuple[dict[str, Any], rsa.RSAPublicKey]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    info = {
        "type": "service_account",
        "project_id": "pydantic-ai",
        "private_key_id": "k1",
        "private_key": pem,
        "client_email": "agent@pydantic-ai.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": token_uri,
    }
    return info, key.public_key()


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


async def test_service_account_token_then_stream(server: ReplayServer) -> None:
    recording = load(NAME)
    interaction = recording["interactions"][0]
    info, public = _service_account(server.url + "/token")
    server.replies.append(Reply(content_type="application/json", body=TOKEN))
    for _ in range(2):
        server.replies.append(Reply(body=interaction["response"]["body"]))
    model = VertexModel(
        "gemini-3-flash-preview",
        location="global",
        credentials_info=info,
        base_url=server.url + "/v1beta1/projects/pydantic-ai/locations/global/publishers/google",
        max_retries=0,
    )
    assert model.project == "pydantic-ai"  # from the service account
    prompt = [{"role": "user", "content": [{"type": "text", "text": "Reply with exactly: OK"}]}]
    for _ in range(2):
        parts = [dict(p) async for p in model.do_stream({"prompt": prompt})]
        assert "".join(p["delta"] for p in parts if p["type"] == "text-delta") == "OK"
    token_request, first, second = server.received
    assert token_request.path == "/token"
    form = parse_qs(token_request.body)
    assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
    header, claims, signature = form["assertion"][0].split(".")
    public.verify(_b64(signature), f"{header}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256())
    payload = json.loads(_b64(claims))
    assert payload["iss"] == info["client_email"]
    assert payload["scope"] == "https://www.googleapis.com/auth/cloud-platform"
    for call in (first, second):  # one token, used until it expires
        assert (call.path, call.query) == (interaction["request"]["path"], "alt=sse")
        assert call.headers["authorization"] == "Bearer ya29.loopback-token"
        assert call.body["contents"] == interaction["request"]["body"]["contents"]


def test_addresses() -> None:
    assert vertex_base_url("p", "global") == (
        "https://aiplatform.googleapis.com/v1beta1/projects/p/locations/global/publishers/google"
    )
    assert vertex_base_url("p", "europe-west4") == (
        "https://europe-west4-aiplatform.googleapis.com/v1beta1/projects/p/locations/europe-west4/publishers/google"
    )


def test_router(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for env in (
        "GOOGLE_VERTEX_API_KEY",
        "GOOGLE_VERTEX_BASE_URL",
        "GOOGLE_VERTEX_PROJECT",
        "GOOGLE_VERTEX_LOCATION",
    ):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setenv("GOOGLE_VERTEX_API_KEY", "express-key")
    express = resolve_model("vertex/gemini-2.5-flash")
    assert isinstance(express, VertexModel)
    assert express._url == (
        "https://aiplatform.googleapis.com/v1beta1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert express._auth_headers() == {"x-goog-api-key": "express-key"}
    monkeypatch.delenv("GOOGLE_VERTEX_API_KEY")
    info, _ = _service_account("http://127.0.0.1:9/token")
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(info))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    monkeypatch.setenv("GOOGLE_VERTEX_LOCATION", "europe-west4")
    model = resolve_model("vertex/gemini-2.5-pro")
    assert isinstance(model, VertexModel) and model.project == "pydantic-ai"
    assert model._url.startswith(
        "https://europe-west4-aiplatform.googleapis.com/v1beta1/projects/pydantic-ai/"
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(MissingAPIKeyError, match="Google Cloud credentials for Vertex AI are missing"):
        resolve_model("vertex/gemini-2.5-pro")
