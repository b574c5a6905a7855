"""Per-token cost of tracing: the same agent run untraced, with tracing off, and traced.

Run: ``.venv/bin/python bench/bench_tracing.py [N]`` (default 100,000 one-token deltas in one run).
CPU time of this process, best of 5 interleaved rounds. The reference is the run of an agent built with ``instrument=False`` (no tracing object at all),
measured in the same process; each variant prints µs per token, the ratio to the reference and the
added cost per token.

* off — ``instrument=None`` and nothing switched on globally: what every user who does not trace
  runs (the decision is made once per run, nothing per token);
* on, no SDK — traced with OpenTelemetry's API only (non-recording spans, e.g. a library user
  whose application installed no SDK);
* on — an SDK ``TracerProvider`` recording every span into an exporter that drops them;
* on + content — the same with ``include_content=True`` (the model's text is collected per token).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracerProvider

from agentstream import Agent
from agentstream.chunks import TextDelta, TextDeltaPayload
from agentstream.testing import ScriptedModel
from agentstream.tracing import InstrumentationSettings, RunTrace


class Drop(SpanExporter):
    """Exports nothing: the cost measured is making and ending the spans, not shipping them."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def parts(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "stream-start", "warnings": []}, {"type": "text-start", "id": "t"}]
    out += [{"type": "text-delta", "id": "t", "delta": "tok "} for _ in range(n)]
    out += [
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": n}},
    ]
    return out


async def timed(step: list[dict[str, Any]], instrument: Any) -> float:
    agent = Agent(id="bench", model=ScriptedModel([step]), instrument=instrument)
    gc.collect()  # the previous run's chunk log is garbage: don't charge its collection to this one
    start = time.process_time()  # CPU time: other processes on a shared machine don't count
    async for _ in agent.stream("go").full_stream:
        pass
    return time.process_time() - start


async def drain(source: Any) -> float:
    gc.collect()
    start = time.process_time()
    async for _ in source:
        pass
    return time.process_time() - start


async def gen(items: list[Any]) -> Any:
    for item in items:
        yield item


async def wrappers(n: int, settings: InstrumentationSettings, rounds: int) -> None:
    """The per-token work tracing adds, alone: the model call's stream and the run's chunk stream,
    each through its tracing wrapper vs. bare (the reference), same parts, same process."""
    step = parts(n)
    chunks = [TextDelta(run_id="r", payload=TextDeltaPayload(id="t", text="tok ")) for _ in range(n)]
    model = ScriptedModel([step] * (rounds * 2 + 2))

    def traced() -> RunTrace:
        return RunTrace(settings, agent_id="a", agent_name="a", run_id="r", model=model, prompt=[])

    best = {
        "model bare": float("inf"),
        "model traced": float("inf"),
        "run bare": float("inf"),
        "run traced": float("inf"),
    }
    for _ in range(rounds):
        best["model bare"] = min(best["model bare"], await drain(model.do_stream({})))
        best["model traced"] = min(best["model traced"], await drain(traced().model(model).do_stream({})))
        best["run bare"] = min(best["run bare"], await drain(gen(chunks)))
        best["run traced"] = min(best["run traced"], await drain(traced().wrap(gen(chunks))))
    for what in ("model", "run"):
        bare, on = best[f"{what} bare"], best[f"{what} traced"]
        print(
            f"  {what} stream wrapper: {bare / n * 1e6:6.3f} → {on / n * 1e6:6.3f} µs/token  "
            f"ratio {on / bare:5.2f}x  added {(on - bare) / n * 1e6:+.3f} µs/token"
        )


async def main(n: int) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))
    variants: dict[str, Any] = {
        "off (instrument=None, nothing global)": None,
        "on, API only (non-recording spans)": InstrumentationSettings(NoOpTracerProvider()),
        "on (SDK, recording spans)": InstrumentationSettings(provider),
        "on + include_content": InstrumentationSettings(provider, include_content=True),
    }
    step = parts(n)
    for instrument in [False, *variants.values()]:
        await timed(parts(1000), instrument)  # warm up every path
    rounds = 5
    best: dict[str, float] = {}
    for _ in range(rounds):  # interleaved, so drift on a shared machine hits every variant alike
        for name, instrument in [("reference", False), *variants.items()]:
            best[name] = min(best.get(name, float("inf")), await timed(step, instrument))
    ref = best["reference"]
    print(f"tokens per run: {n}, best of {rounds}")
    print(f"{'reference (instrument=False)':<40} {ref / n * 1e6:7.3f} µs/token")
    for name in variants:
        t = best[name]
        print(
            f"{name:<40} {t / n * 1e6:7.3f} µs/token  ratio {t / ref:5.2f}x  "
            f"added {(t - ref) / n * 1e6:+.3f} µs/token"
        )
    print("the wrappers alone (SDK, recording spans):")
    await wrappers(n, variants["on (SDK, recording spans)"], rounds)
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000))
