"""Language models: the ``LanguageModel`` protocol, real HTTP providers and the model router.

Providers emit AI SDK ``LanguageModelV2StreamPart`` dicts (see ``_base.py``); the agent layer turns
them into Mastra chunks. Ported from the behaviour of ``@ai-sdk/openai`` (chat + responses) and
``@ai-sdk/anthropic`` (AI SDK 5, ``LanguageModelV2``).
"""

from __future__ import annotations

from ._anthropic import AnthropicModel, convert_to_anthropic_messages
from ._azure import AzureOpenAIModel
from ._base import (
    APICallError,
    CallOptions,
    CustomPart,
    ErrorPart,
    FilePart,
    FinishPart,
    FinishReason,
    LanguageModel,
    ModelStream,
    ProviderMetadata,
    RawPart,
    ReasoningDeltaPart,
    ReasoningEndPart,
    ReasoningFilePart,
    ReasoningStartPart,
    ResponseFormat,
    ResponseMetadataPart,
    SourcePart,
    StreamPart,
    StreamStartPart,
    TextDeltaPart,
    TextEndPart,
    TextStartPart,
    ToolCallPart,
    ToolInputDeltaPart,
    ToolInputEndPart,
    ToolInputStartPart,
    ToolResultPart,
)
from ._bedrock import BedrockModel
from ._bedrock_mantle import BedrockMantleModel
from ._cohere import CohereModel
from ._fallback import FallbackModel
from ._google import GoogleModel
from ._http import TransportOptions
from ._offline import OfflineModel
from ._openai_chat import OpenAIChatModel, OpenAICompatible, convert_to_openai_chat_messages
from ._openai_responses import OpenAIResponsesModel, convert_to_openai_responses_input
from ._prompt import InvalidPromptError
from ._router import (
    MissingAPIKeyError,
    ProviderKey,
    UnknownProviderError,
    provider_keys,
    register_model_factory,
    resolve_model,
)
from ._vertex import VertexModel

__all__ = [
    "APICallError",
    "AnthropicModel",
    "AzureOpenAIModel",
    "BedrockMantleModel",
    "BedrockModel",
    "CallOptions",
    "CohereModel",
    "CustomPart",
    "ErrorPart",
    "FallbackModel",
    "FilePart",
    "FinishPart",
    "FinishReason",
    "GoogleModel",
    "InvalidPromptError",
    "LanguageModel",
    "MissingAPIKeyError",
    "ModelStream",
    "OfflineModel",
    "OpenAIChatModel",
    "OpenAICompatible",
    "OpenAIResponsesModel",
    "ProviderKey",
    "ProviderMetadata",
    "RawPart",
    "ReasoningDeltaPart",
    "ReasoningEndPart",
    "ReasoningFilePart",
    "ReasoningStartPart",
    "ResponseFormat",
    "ResponseMetadataPart",
    "SourcePart",
    "StreamPart",
    "StreamStartPart",
    "TextDeltaPart",
    "TextEndPart",
    "TextStartPart",
    "ToolCallPart",
    "ToolInputDeltaPart",
    "ToolInputEndPart",
    "ToolInputStartPart",
    "ToolResultPart",
    "TransportOptions",
    "UnknownProviderError",
    "VertexModel",
    "convert_to_anthropic_messages",
    "convert_to_openai_chat_messages",
    "convert_to_openai_responses_input",
    "provider_keys",
    "register_model_factory",
    "resolve_model",
]
