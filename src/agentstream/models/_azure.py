"""Azure OpenAI (``POST {base}/openai/deployments/{deployment}/chat/completions?api-version=…``).

The Chat Completions wire format with Azure's addressing and auth (``@ai-sdk/azure`` with
``useDeploymentBasedUrls``): the model id is the deployment name, every request carries the
``api-version`` query, and the credential is an ``api-key`` header, or a Microsoft Entra ID bearer
token from a provider callable (``azure.identity.get_bearer_token_provider(...)`` returns one).
Azure's extra stream fields (``prompt_filter_results``, ``content_filter_results``, chunks with no
``choices``) are ignored like any other unknown field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._openai_chat import OpenAIChatModel

__all__ = ["DEFAULT_AZURE_API_VERSION", "AzureOpenAIModel"]

DEFAULT_AZURE_API_VERSION = "2024-10-21"
"""The latest generally available data-plane API version (``AZURE_OPENAI_API_VERSION`` overrides it)."""


class AzureOpenAIModel(OpenAIChatModel):
    """An Azure OpenAI deployment.

    **Parameters:** `deployment` (the deployment name, used as the model id); `base_url` (the
    resource's endpoint, ``https://<resource>.openai.azure.com``); `api_key` (sent as ``api-key``) or
    `azure_ad_token_provider` (a callable returning an Entra ID token, sent as ``Authorization:
    Bearer`` and called for every request, so it may refresh); `api_version`; plus everything
    `OpenAIChatModel` takes.
    """

    def __init__(
        self,
        deployment: str,
        *,
        base_url: str,
        api_key: str | None = None,
        azure_ad_token_provider: Callable[[], str] | None = None,
        api_version: str = DEFAULT_AZURE_API_VERSION,
        provider: str = "azure",
        **kwargs: Any,
    ) -> None:
        if api_key is None and azure_ad_token_provider is None:
            raise ValueError("AzureOpenAIModel needs api_key= or azure_ad_token_provider=")
        super().__init__(deployment, base_url=base_url, api_key=api_key, provider=provider, **kwargs)
        self.api_version = api_version
        self._token_provider = azure_ad_token_provider
        self._url = (
            f"{self.base_url}/openai/deployments/{deployment}/chat/completions?api-version={api_version}"
        )

    def _auth_headers(self) -> dict[str, str]:
        if self._token_provider is not None:
            return {"authorization": f"Bearer {self._token_provider()}"}
        return {"api-key": self._api_key} if self._api_key else {}
