"""``Tripwire``: the exception a processor's ``abort()`` raises (Mastra's ``TripWire``).

Raised from any loop hook, it is turned into the behaviour of the phase it was raised in (spec
§7.2, see `run_loop`): a single ``tripwire`` chunk for the input, the part dropped and the stream
ended for the output stream, a retried or stopped step for the output step, an uncommitted tool
result, an empty result for the output result.
"""

from __future__ import annotations

from typing import Any

from ..chunks import ChunkFrom, TripwirePayload
from ..chunks import Tripwire as TripwireChunk

__all__ = ["Tripwire"]


class Tripwire(Exception):
    """A guardrail tripped: ``reason``, whether the step may be ``retry``-ed with feedback, free
    ``metadata`` and the id of the processor that raised it."""

    def __init__(
        self,
        reason: str,
        *,
        retry: bool = False,
        metadata: Any = None,
        processor_id: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry
        self.metadata = metadata
        self.processor_id = processor_id
        self.retry_denied = False
        """Set by the processor runner when ``retry`` was asked but the retry budget is spent (or was
        never configured): the loop then treats it as a plain abort."""
        self.retry_count = 0
        """Set by the processor runner when it allows the retry: the consecutive retries so far,
        this one included (``processorRetryCount`` of the retried step's ``step-finish``)."""

    @property
    def will_retry(self) -> bool:
        """Whether the loop retries the step (retry asked and allowed)."""
        return self.retry and not self.retry_denied

    def data(self) -> dict[str, Any]:
        """Mastra's ``StepTripwireData`` (``{reason, retry?, metadata?, processorId?}``) as JSON."""
        out: dict[str, Any] = {"reason": self.reason}
        if self.retry:
            out["retry"] = True
        if self.metadata is not None:
            out["metadata"] = self.metadata
        if self.processor_id is not None:
            out["processorId"] = self.processor_id
        return out

    def chunk(self, run_id: str | None = None) -> TripwireChunk:
        """The ``tripwire`` chunk; ``run_id`` (and ``from: AGENT``) only for the input phase, as Mastra."""
        payload = TripwirePayload(
            reason=self.reason,
            retry=True if self.retry else None,
            processor_id=self.processor_id,
            **({"metadata": self.metadata} if self.metadata is not None else {}),
        )
        if run_id is None:
            return TripwireChunk(payload=payload)
        return TripwireChunk(run_id=run_id, from_=ChunkFrom.AGENT, payload=payload)

    def __repr__(self) -> str:
        return f"Tripwire({self.reason!r}, retry={self.retry!r}, processor_id={self.processor_id!r})"
