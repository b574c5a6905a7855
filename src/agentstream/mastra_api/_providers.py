"""``GET /agents/providers``: Studio's model picker and its "key not set" warning, from the
providers `agentstream.models` routes to (`provider_keys`) and the models the app's agents use.

Mastra answers every provider of its models.dev registry with that provider's whole model list;
we have no catalog of model ids (an agent's model is set in code, and a request cannot switch it:
`check_model_choice`), so a provider lists the models this app's agents run on, and the others
none. ``connected`` is Mastra's rule: the provider's key variable is set (nothing is called).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models import provider_keys
from ._http import ApiError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..agent import Agent
    from ._context import ApiContext

__all__ = ["agent_model", "check_model_choice", "providers_json"]

_NAMES = {
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "google": "Google",
    "vertex": "Google Vertex AI",
    "bedrock": "Amazon Bedrock",
    "bedrock-mantle": "Amazon Bedrock Mantle",
    "azure": "Azure OpenAI",
    "cohere": "Cohere",
    "groq": "Groq",
    "openrouter": "OpenRouter",
    "deepseek": "DeepSeek",
    "mistral": "Mistral",
    "xai": "xAI",
    "together": "Together AI",
    "fireworks": "Fireworks",
    "cerebras": "Cerebras",
    "zai": "Z.AI",
    "huggingface": "Hugging Face",
    "ollama": "Ollama",
    "lmstudio": "LM Studio",
    "vllm": "vLLM",
    "demo": "agentstream demo (offline)",
    "offline": "agentstream offline",
}


def agent_model(agent: Agent) -> tuple[str, str] | None:
    """``(provider, model id)`` of the agent's model as Studio matches it (the provider before any
    ``.``: ``openai.chat`` is ``openai``), or ``None`` when it cannot be resolved."""
    try:
        model = agent.model
    except Exception:  # a model without its key: listed nowhere (GET /agents says why)
        return None
    provider, model_id = getattr(model, "provider", None), getattr(model, "model_id", None)
    if not isinstance(provider, str) or not isinstance(model_id, str):
        return None
    return provider.split(".", 1)[0], model_id


def providers_json(context: ApiContext) -> dict[str, Any]:
    """Mastra's ``{providers: [{id, name, label, description, envVar, connected, models}]}``."""
    used: dict[str, list[str]] = {}
    for agent in context.mastra.get_agents().values():
        found = agent_model(agent)
        if found is not None and found[1] not in used.setdefault(found[0], []):
            used[found[0]].append(found[1])
    out: list[dict[str, Any]] = []
    keys = {key.id: key for key in provider_keys()}
    for provider_id in [*keys, *sorted(set(used) - set(keys))]:
        key = keys.get(provider_id)
        name = _NAMES.get(provider_id, provider_id)
        env: Any = list(key.env) if key is not None else []
        out.append(
            {
                "id": provider_id,
                "name": name,
                "label": name,
                "description": "",
                "envVar": env[0] if len(env) == 1 else env,
                "connected": key.connected if key is not None else True,  # a model object of the app's
                "models": sorted(used.get(provider_id, [])),
            }
        )
    return {"providers": out}


def check_model_choice(agent: Agent, options: Mapping[str, Any]) -> None:
    """A request naming a model (Studio's composer picker: ``model: "provider/id"``) must name the
    agent's own: a caller does not switch the model (its cost and its data's destination are the
    server's choice), and answering with another model than the one picked would mislead."""
    chosen = options.get("model")
    if chosen is None:
        return
    own = agent_model(agent)
    if isinstance(chosen, str) and own is not None:
        provider, _, model_id = chosen.partition("/")
        if (provider.split(".", 1)[0], model_id) == own:
            return
    shown = f"{own[0]}/{own[1]}" if own is not None else "set in code"
    raise ApiError(
        f"model: this agent's model is {shown}; a request cannot choose another (got {str(chosen)[:100]!r})"
    )
