"""Processors: guardrails and rewriters on an agent's input, stream, steps and result (Mastra's
processors, spec §7).

``Agent(input_processors=[...], output_processors=[...], error_processors=[...],
max_processor_retries=None)`` (or the same as ``stream()`` options). A processor is any object
with an ``id`` and some of the `Processor` methods; ``abort(reason, retry=..., metadata=...)``
inside one raises `Tripwire`, which blocks the run (``output.tripwire``) or, for an output step
with ``retry=True`` and a retry budget, asks the model again with the feedback.

Built in: deterministic `UnicodeNormalizer`, `TokenLimiter`, `SecretRedactor`; judged by any
`LanguageModel`: `ModerationProcessor`, `PromptInjectionDetector`, `PIIDetector`.
"""

from __future__ import annotations

from ..agent import Processor, ProcessorHooks, ProcessorWriter, Tripwire
from ..stream import TripwireInfo
from ._judged import ModerationProcessor, PIIDetector, PromptInjectionDetector, Strategy
from ._redact import DEFAULT_PATTERNS, SecretRedactor, luhn_valid
from ._text import message_text
from ._tokens import TokenLimiter, approximate_tokens
from ._unicode import UnicodeNormalizer

__all__ = [
    "DEFAULT_PATTERNS",
    "ModerationProcessor",
    "PIIDetector",
    "Processor",
    "ProcessorHooks",
    "ProcessorWriter",
    "PromptInjectionDetector",
    "SecretRedactor",
    "Strategy",
    "TokenLimiter",
    "Tripwire",
    "TripwireInfo",
    "UnicodeNormalizer",
    "approximate_tokens",
    "luhn_valid",
    "message_text",
]
