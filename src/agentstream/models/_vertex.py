"""Google Vertex AI: the Gemini API on Vertex URLs with Google Cloud auth (extra ``vertex``).

The wire format is the Gemini API's (`GoogleModel`); what differs is the address
(``{base}/projects/{project}/locations/{location}/publishers/google/models/{id}``, ``global`` on
``aiplatform.googleapis.com``, a region on ``{region}-aiplatform.googleapis.com``) and the
credential: an OAuth access token from ``google-auth`` (a service-account JSON, or application
default credentials: ``GOOGLE_APPLICATION_CREDENTIALS``, gcloud, the metadata server), refreshed in a
worker thread before a request when it has expired; or, in Vertex express mode, an API key.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Awaitable
from typing import Any

from ._errors import MissingAPIKeyError
from ._google import GoogleModel

__all__ = ["VertexModel"]

_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


def _google_auth() -> Any:
    """google-auth's modules (imported by name: the extra is optional)."""
    try:
        for name in ("google.auth", "google.auth.transport.requests", "google.oauth2.service_account"):
            importlib.import_module(name)
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise ImportError("Vertex AI needs google-auth: pip install 'agentstream[vertex]'") from exc
    return importlib.import_module("google")


def vertex_base_url(project: str, location: str) -> str:
    host = "aiplatform.googleapis.com" if location == "global" else f"{location}-aiplatform.googleapis.com"
    return f"https://{host}/v1beta1/projects/{project}/locations/{location}/publishers/google"


class VertexModel(GoogleModel):
    """A Gemini model on Vertex AI.

    **Parameters:** `model_id`; `project` (default ``GOOGLE_VERTEX_PROJECT``, else the credentials'
    project); `location` (default ``GOOGLE_VERTEX_LOCATION`` or ``us-central1``); `credentials` (a
    ``google.auth.credentials.Credentials``), `credentials_info` (a service-account JSON as a dict) or
    `credentials_file` (its path), else application default credentials; `api_key` for express mode
    (then no project is needed); `base_url` replaces everything up to ``/models/``; plus what
    `GoogleModel` takes.
    """

    def __init__(
        self,
        model_id: str,
        *,
        project: str | None = None,
        location: str | None = None,
        credentials: Any = None,
        credentials_info: dict[str, Any] | None = None,
        credentials_file: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        **kwargs: Any,
    ) -> None:
        location = location or os.environ.get("GOOGLE_VERTEX_LOCATION") or "us-central1"
        self._google: Any = None
        self._credentials: Any = None
        if api_key is None:
            self._google = _google_auth()
            credentials, found = self._load(credentials, credentials_info, credentials_file)
            self._credentials = credentials
            project = project or os.environ.get("GOOGLE_VERTEX_PROJECT") or found
            if base_url is None and not project:
                raise MissingAPIKeyError(
                    "Vertex AI needs a Google Cloud project: set GOOGLE_VERTEX_PROJECT or pass project=..."
                )
        if base_url is None:
            base_url = (
                vertex_base_url(str(project), location)
                if api_key is None
                else "https://aiplatform.googleapis.com/v1beta1/publishers/google"
            )
        super().__init__(model_id, base_url=base_url, api_key=api_key, provider="vertex", **kwargs)
        self.project, self.location = project, location

    def _load(
        self, credentials: Any, info: dict[str, Any] | None, path: str | None
    ) -> tuple[Any, str | None]:
        accounts = self._google.oauth2.service_account.Credentials
        if credentials is not None:
            return credentials, getattr(credentials, "project_id", None)
        if info is not None:
            return accounts.from_service_account_info(info, scopes=_SCOPES), info.get("project_id")
        if path is not None:
            found = accounts.from_service_account_file(path, scopes=_SCOPES)
            return found, getattr(found, "project_id", None)
        try:
            found, project = self._google.auth.default(scopes=_SCOPES)
            return found, project
        except self._google.auth.exceptions.DefaultCredentialsError as exc:
            raise MissingAPIKeyError(
                "Google Cloud credentials for Vertex AI are missing: set GOOGLE_APPLICATION_CREDENTIALS to a "
                "service-account JSON file, run `gcloud auth application-default login`, or pass "
                "credentials=... / api_key=... (express mode)"
            ) from exc

    def _refresh_credentials(self) -> Awaitable[None] | None:
        if self._credentials is None or self._credentials.valid:
            return None
        request = self._google.auth.transport.requests.Request()
        # google-auth refreshes synchronously over `requests`: off the event loop.
        return asyncio.to_thread(self._credentials.refresh, request)

    def _auth_headers(self) -> dict[str, str]:
        if self._credentials is not None:
            return {"authorization": f"Bearer {self._credentials.token}"}
        return super()._auth_headers()
