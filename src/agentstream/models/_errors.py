"""The model router's errors: a credential or setting a provider needs is missing, an unknown provider."""

from __future__ import annotations

__all__ = ["MissingAPIKeyError", "UnknownProviderError"]


class MissingAPIKeyError(ValueError):
    """A provider's credential or required setting is missing (an API key, AWS credentials or region,
    Google Cloud credentials or project, an Azure endpoint): neither given nor in the environment.
    The message names the environment variable or argument that would supply it."""


class UnknownProviderError(ValueError):
    """The model string names no provider, or one the router does not know (the message lists them)."""
