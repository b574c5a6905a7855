"""Amazon Bedrock's OpenAI-compatible Responses endpoint ("Mantle": ``POST {base}/responses``).

The wire format is OpenAI's Responses API (`OpenAIResponsesModel`); what differs:

* the address, ``https://bedrock-mantle.{region}.api.aws/openai/v1``, and the credential, a Bedrock
  API key (``AWS_BEARER_TOKEN_BEDROCK``) sent as a bearer token;
* each event's ``data:`` line comes before its ``event:`` line (the SSE parser does not care);
* function-call ids are short counters (``call_0``, ``call_1``) that start again in every response,
  so two turns' calls would share an id: a call's id here is ``"{response id}:{call_id}"``, which
  Mantle accepts back in ``function_call`` / ``function_call_output`` items (the recording's later
  turns send exactly that);
* reasoning is only available encrypted, so ``include: ["reasoning.encrypted_content"]`` is sent by
  default and the reasoning items are replayed by content on the next turn.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import Unpack

from ._base import CallOptions, StreamPart
from ._http import TransportOptions, _Transformer
from ._openai_responses import OpenAIResponsesModel, _ResponsesTransformer

__all__ = ["BedrockMantleModel", "mantle_base_url"]


def mantle_base_url(region: str) -> str:
    return f"https://bedrock-mantle.{region}.api.aws/openai/v1"


class _MantleTransformer(_ResponsesTransformer):
    def feed(self, event: str, value: Any) -> list[StreamPart]:
        if (
            isinstance(value, dict)
            and value.get("type") in ("response.output_item.added", "response.output_item.done")
            and isinstance(value.get("item"), dict)
            and value["item"].get("type") == "function_call"
            and self.response_id
            and ":" not in str(value["item"].get("call_id"))
        ):
            item = {**value["item"], "call_id": f"{self.response_id}:{value['item']['call_id']}"}
            value = {**value, "item": item}
        return super().feed(event, value)


class BedrockMantleModel(OpenAIResponsesModel):
    """A model on Amazon Bedrock's OpenAI-compatible Responses endpoint.

    **Parameters:** `model_id` (``"openai.gpt-oss-120b"`` …); `region` (default ``AWS_REGION``,
    selects the endpoint) or `base_url`; `api_key` (a Bedrock API key); plus what
    `OpenAIResponsesModel` takes. Provider options go under ``"openai"`` as for OpenAI.
    """

    def __init__(
        self,
        model_id: str,
        *,
        api_key: str,
        region: str | None = None,
        base_url: str | None = None,
        provider: str = "bedrock-mantle",
        system_role: str = "system",
        **transport: Unpack[TransportOptions],
    ) -> None:
        if base_url is None:
            if not region:
                raise ValueError("BedrockMantleModel needs region= or base_url=")
            base_url = mantle_base_url(region)
        super().__init__(
            model_id,
            base_url=base_url,
            api_key=api_key,
            provider=provider,
            system_role=system_role,
            **transport,
        )
        self.region = region

    def _request(self, options: CallOptions) -> tuple[str, str, dict[str, Any] | None, list[dict[str, Any]]]:
        method, url, body, warnings = super()._request(options)
        assert body is not None
        body.setdefault("include", ["reasoning.encrypted_content"])
        return method, url, body, warnings

    def _transformer(self, options: CallOptions) -> _Transformer:
        return _MantleTransformer(self)
