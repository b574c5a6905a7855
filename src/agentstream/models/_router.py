"""Model router: ``"provider/model-id"`` strings → ``LanguageModel`` instances (Mastra's model router)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._anthropic import AnthropicModel
from ._azure import DEFAULT_AZURE_API_VERSION, AzureOpenAIModel
from ._base import LanguageModel
from ._bedrock_mantle import BedrockMantleModel
from ._cohere import CohereModel
from ._demo import DemoModel
from ._errors import MissingAPIKeyError, UnknownProviderError
from ._fallback import FallbackModel, fallback_entries
from ._google import GoogleModel
from ._offline import OfflineModel
from ._openai_chat import OpenAIChatModel
from ._openai_responses import OpenAIResponsesModel

__all__ = [
    "MissingAPIKeyError",
    "ProviderKey",
    "UnknownProviderError",
    "known_providers",
    "offline_forced",
    "provider_keys",
    "register_model_factory",
    "resolve_model",
]

ModelFactory = Callable[..., LanguageModel]
"""``factory(model_id, **kwargs) -> LanguageModel``."""


@dataclass(frozen=True)
class _Compat:
    base_url: str
    key_env: str | None
    base_url_env: str | None = None
    key_required: bool = True
    kwargs: tuple[tuple[str, Any], ...] = ()


# OpenAI-compatible Chat Completions providers: standard base URLs and env vars.
_COMPAT: dict[str, _Compat] = {
    "openai": _Compat("https://api.openai.com/v1", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "groq": _Compat("https://api.groq.com/openai/v1", "GROQ_API_KEY", "GROQ_BASE_URL"),
    "openrouter": _Compat("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL"),
    "deepseek": _Compat("https://api.deepseek.com", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL"),
    "mistral": _Compat("https://api.mistral.ai/v1", "MISTRAL_API_KEY", "MISTRAL_BASE_URL"),
    "xai": _Compat("https://api.x.ai/v1", "XAI_API_KEY", "XAI_BASE_URL"),
    "together": _Compat(
        "https://api.together.xyz/v1",
        "TOGETHER_API_KEY",
        "TOGETHER_BASE_URL",
        kwargs=(("parse_think_tags", True),),
    ),
    "fireworks": _Compat("https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY", "FIREWORKS_BASE_URL"),
    "cerebras": _Compat("https://api.cerebras.ai/v1", "CEREBRAS_API_KEY", "CEREBRAS_BASE_URL"),
    "zai": _Compat("https://api.z.ai/api/paas/v4", "ZAI_API_KEY", "ZAI_BASE_URL"),
    "huggingface": _Compat("https://router.huggingface.co/v1", "HF_TOKEN", "HF_BASE_URL"),
    "ollama": _Compat("http://localhost:11434/v1", "OLLAMA_API_KEY", "OLLAMA_BASE_URL", key_required=False),
    "lmstudio": _Compat(
        "http://localhost:1234/v1", "LMSTUDIO_API_KEY", "LMSTUDIO_BASE_URL", key_required=False
    ),
    "vllm": _Compat("http://localhost:8000/v1", "VLLM_API_KEY", "VLLM_BASE_URL", key_required=False),
}

_factories: dict[str, ModelFactory] = {}


def register_model_factory(prefix: str, factory: ModelFactory) -> None:
    """Make ``resolve_model(f"{prefix}/<id>")`` (or just ``prefix``) call ``factory(model_id, **kw)``.

    Registered prefixes win over built-in providers (``"demo"``: the demo agent's model;
    ``"offline"``: the offline model for your own agent).
    """
    if not prefix or "/" in prefix:
        raise ValueError(f"invalid model prefix {prefix!r}")
    _factories[prefix] = factory


def known_providers() -> list[str]:
    """Every prefix `resolve_model` accepts (built-in providers and registered factories), sorted."""
    return sorted(
        {
            *_COMPAT,
            "anthropic",
            "azure",
            "bedrock",
            "bedrock-mantle",
            "cohere",
            "demo",
            "google",
            "offline",
            "vertex",
            "openai.chat",
            "openai.responses",
            *_factories,
        }
    )


# The key variables of the providers `_resolve` builds itself (any one of a tuple is enough).
_NATIVE_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "azure": ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY"),
    "bedrock": ("AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID"),
    "bedrock-mantle": ("AWS_BEARER_TOKEN_BEDROCK",),
    "cohere": ("COHERE_API_KEY",),
    "google": ("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY"),
    "vertex": ("GOOGLE_VERTEX_API_KEY",),
}


@dataclass(frozen=True)
class ProviderKey:
    """A provider `resolve_model` routes to, and whether this process can call it now."""

    id: str
    """The prefix of its model strings (``openai`` in ``openai/gpt-4o-mini``)."""
    env: tuple[str, ...]
    """The environment variables its key is read from (empty: it needs none)."""
    connected: bool
    """A key is set (or none is needed: local servers, the offline models, registered factories)."""


def provider_keys() -> list[ProviderKey]:
    """Every provider prefix (but the ``openai.chat`` / ``openai.responses`` spellings of
    ``openai``) with its key variables, by id. Nothing is called: "connected" means a key is set."""
    out: list[ProviderKey] = []
    for prefix in known_providers():
        if "." in prefix:
            continue
        compat = _COMPAT.get(prefix)
        env: tuple[str, ...]
        if compat is not None:
            env = (compat.key_env,) if compat.key_env else ()
            needed = compat.key_required
        else:
            env = _NATIVE_KEYS.get(prefix, ())
            needed = bool(env)
        connected = not needed or any(os.environ.get(name) for name in env)
        out.append(ProviderKey(prefix, env, connected))
    return out


OFFLINE_ENV = "AGENTSTREAM_OFFLINE"


def offline_forced() -> bool:
    """Whether ``AGENTSTREAM_OFFLINE`` (``1``, ``true``, ``yes``) sends every model string to the offline model."""
    value = os.environ.get(OFFLINE_ENV, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise ValueError(f"{OFFLINE_ENV} must be 1, true, yes, 0, false or no, got {value!r}")


def _key(name: str, env: str | None, given: str | None, required: bool) -> str | None:
    if given:
        return given
    value = os.environ.get(env) if env else None
    if not value and required:
        raise MissingAPIKeyError(
            f"{name} API key is missing: set the {env} environment variable or pass api_key=..."
        )
    return value or None


def resolve_model(spec: str | LanguageModel | Sequence[Any], **kwargs: Any) -> LanguageModel:
    """Turn ``"openai/gpt-4o-mini"``, ``"anthropic/claude-sonnet-4-5"`` … into a model; models pass through.

    ``openai/…`` uses Chat Completions unless ``api="responses"`` is given or the prefix is
    ``openai.responses/``. Keyword arguments (``api_key``, ``base_url``, ``timeout``, ``max_retries``,
    ``sleep``, ``http_client``, …) go to the provider class. API keys and base URLs default to the
    provider's environment variables (``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``
    / ``ANTHROPIC_BASE_URL``, ``GROQ_API_KEY``, ``OPENROUTER_API_KEY``, ``DEEPSEEK_API_KEY`` …).
    A list (Mastra's ``[{"model": …, "max_retries": n}, …]``) is a `FallbackModel`.

    With ``AGENTSTREAM_OFFLINE=1`` in the environment every string except ``"demo"`` resolves to
    the offline model (`OfflineModel`, keeping the string as its ``model_id``): an app written for
    a real provider runs without a key or a network.
    """
    return _resolve(spec, offline_forced(), kwargs)


def _resolve(
    spec: str | LanguageModel | Sequence[Any], offline: bool, kwargs: dict[str, Any]
) -> LanguageModel:
    """`resolve_model` with ``AGENTSTREAM_OFFLINE`` read once for the whole spec (every fallback entry)."""
    if isinstance(spec, list | tuple):
        entries = fallback_entries(spec, lambda entry: _resolve(entry, offline, {}))
        return FallbackModel(entries, **kwargs)
    if not isinstance(spec, str):
        if isinstance(spec, LanguageModel):
            return spec
        raise TypeError(f"expected a model string or a LanguageModel, got {type(spec).__name__}")
    prefix, sep, model_id = spec.partition("/")
    if prefix not in ("demo", "offline") and offline:
        # the app's own model strings stay as written; only what answers them changes
        return OfflineModel(model_id=spec)
    if prefix in _factories:
        return _factories[prefix](model_id, **kwargs)
    if prefix == "demo":
        return DemoModel(model_id=model_id or "demo", **kwargs)
    if prefix == "offline":
        return OfflineModel(model_id=model_id or "offline", **kwargs)
    if not sep:
        raise UnknownProviderError(
            f"model {spec!r} names no provider: use 'provider/model-id' (e.g. 'openai/gpt-4o-mini'); "
            f"known providers: {', '.join(known_providers())}"
        )
    if not model_id:
        raise ValueError(f"model {spec!r} names no model id: use '{prefix}/<model-id>'")

    api = kwargs.pop("api", None)
    api_key = kwargs.pop("api_key", None)
    base_url = kwargs.pop("base_url", None)
    if prefix == "anthropic":
        key = _key("Anthropic", "ANTHROPIC_API_KEY", api_key, True)
        url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com/v1"
        return AnthropicModel(model_id, api_key=key, base_url=url, **kwargs)
    if prefix == "vertex":
        return _vertex(model_id, api_key, base_url, kwargs)
    if prefix == "bedrock":
        return _bedrock(model_id, api_key, base_url, kwargs)
    if prefix == "bedrock-mantle":
        return _bedrock_mantle(model_id, api_key, base_url, kwargs)
    if prefix == "cohere":
        key = _key("Cohere", "COHERE_API_KEY", api_key, True)
        url = base_url or os.environ.get("COHERE_BASE_URL") or "https://api.cohere.com/v2"
        return CohereModel(model_id, api_key=key, base_url=url, **kwargs)
    if prefix == "azure":
        return _azure(model_id, api_key, base_url, kwargs)
    if prefix == "google":
        key = os.environ.get("GOOGLE_GENERATIVE_AI_API_KEY") or os.environ.get("GEMINI_API_KEY")
        if not (api_key or key):
            raise MissingAPIKeyError(
                "Google API key is missing: set the GOOGLE_GENERATIVE_AI_API_KEY environment variable "
                "or pass api_key=..."
            )
        url = (
            base_url
            or os.environ.get("GOOGLE_GEMINI_BASE_URL")
            or "https://generativelanguage.googleapis.com/v1beta"
        )
        return GoogleModel(model_id, api_key=api_key or key, base_url=url, **kwargs)
    if prefix == "openai.responses" or (prefix == "openai" and api == "responses"):
        key = _key("OpenAI", "OPENAI_API_KEY", api_key, True)
        url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        return OpenAIResponsesModel(model_id, api_key=key, base_url=url, **kwargs)
    if prefix == "openai.chat":
        prefix = "openai"
    compat = _COMPAT.get(prefix)
    if compat is None:
        raise UnknownProviderError(
            f"unknown model provider {prefix!r} in {spec!r}; known providers: {', '.join(known_providers())}"
        )
    if api not in (None, "chat"):
        raise ValueError(f"provider {prefix!r} supports api='chat' only, got {api!r}")
    key = _key("OpenAI" if prefix == "openai" else prefix, compat.key_env, api_key, compat.key_required)
    url = (
        base_url or (os.environ.get(compat.base_url_env) if compat.base_url_env else None) or compat.base_url
    )
    options = dict(compat.kwargs)
    options.update(kwargs)
    return OpenAIChatModel(model_id, api_key=key, base_url=url, provider=prefix, **options)


def _azure(
    deployment: str, api_key: str | None, base_url: str | None, kwargs: dict[str, Any]
) -> LanguageModel:
    if kwargs.get("azure_ad_token_provider") is None:
        api_key = api_key or os.environ.get("AZURE_API_KEY") or os.environ.get("AZURE_OPENAI_API_KEY")
        if not api_key:
            raise MissingAPIKeyError(
                "Azure OpenAI API key is missing: set the AZURE_API_KEY environment variable, or pass "
                "api_key=... or azure_ad_token_provider=..."
            )
    resource = os.environ.get("AZURE_RESOURCE_NAME")
    url = (
        base_url
        or os.environ.get("AZURE_OPENAI_BASE_URL")
        or (f"https://{resource}.openai.azure.com" if resource else None)
    )
    if not url:
        raise MissingAPIKeyError(
            "Azure OpenAI needs its endpoint: set AZURE_OPENAI_BASE_URL (https://<resource>.openai.azure.com) "
            "or AZURE_RESOURCE_NAME, or pass base_url=..."
        )
    kwargs.setdefault("api_version", os.environ.get("AZURE_OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION)
    return AzureOpenAIModel(deployment, base_url=url, api_key=api_key, **kwargs)


def _bedrock(
    model_id: str, api_key: str | None, base_url: str | None, kwargs: dict[str, Any]
) -> LanguageModel:
    from ._bedrock import BedrockModel  # botocore (extra `bedrock`) is imported only for Bedrock

    region = (
        kwargs.pop("region", None) or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    )
    if not region:
        raise MissingAPIKeyError("Amazon Bedrock needs a region: set AWS_REGION or pass region=...")
    key = api_key or os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
    url = base_url or os.environ.get("AWS_BEDROCK_BASE_URL")
    return BedrockModel(model_id, region=region, api_key=key, base_url=url, **kwargs)


def _bedrock_mantle(
    model_id: str, api_key: str | None, base_url: str | None, kwargs: dict[str, Any]
) -> LanguageModel:
    key = api_key or os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
    if not key:
        raise MissingAPIKeyError(
            "Bedrock Mantle API key is missing: set the AWS_BEARER_TOKEN_BEDROCK environment variable "
            "(a Bedrock API key) or pass api_key=..."
        )
    url = base_url or os.environ.get("AWS_BEDROCK_MANTLE_BASE_URL")
    region = (
        kwargs.pop("region", None) or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    )
    if not (url or region):
        raise MissingAPIKeyError("Bedrock Mantle needs a region: set AWS_REGION or pass region=...")
    return BedrockMantleModel(model_id, api_key=key, region=region, base_url=url, **kwargs)


def _vertex(
    model_id: str, api_key: str | None, base_url: str | None, kwargs: dict[str, Any]
) -> LanguageModel:
    from ._vertex import VertexModel  # google-auth (extra `vertex`) is imported only for Vertex

    key = api_key or os.environ.get("GOOGLE_VERTEX_API_KEY")
    url = base_url or os.environ.get("GOOGLE_VERTEX_BASE_URL")
    return VertexModel(model_id, api_key=key, base_url=url, **kwargs)
