"""Sub-agent progress for the UI: a nested agent's chunks folded into ``data-tool-agent`` snapshots.

Mastra's ``transformAgent`` (``@mastra/ai-sdk``): one run state per sub-agent run id, updated by the
run's chunks (text, reasoning, sources, files, tool calls and results, steps, finish). Every change
yields a ``data-tool-agent`` snapshot; a finished step also yields one ``data-tool-agent-step`` part
with the step's full detail. Until the run finishes, the snapshot's completed steps are compact
(their text, tool calls and response messages emptied): the step part already carried them, and a
long run would otherwise resend every step on every token.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from agentstream.chunks import format_date, to_jsonable

__all__ = ["AgentRunTracker"]

_COMPACT_EMPTY = (
    "files",
    "sources",
    "toolCalls",
    "pendingToolCalls",
    "toolResults",
    "dynamicToolCalls",
    "dynamicToolResults",
    "staticToolCalls",
    "staticToolResults",
    "reasoning",
)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _response(response: Any, *, include_messages: bool) -> Any:
    if not isinstance(response, Mapping):
        return response
    out = dict(response)
    for key in ("messages", "dbMessages", "uiMessages"):
        if key in out and not include_messages:
            out[key] = []
    return out


def _step_view(step: Mapping[str, Any], *, detailed: bool) -> dict[str, Any]:
    if detailed:
        return {**step, "response": _response(step.get("response"), include_messages=True)}
    out = dict(step)
    out["object"] = None
    for key in _COMPACT_EMPTY:
        out[key] = []
    out["text"] = ""
    if isinstance(out.get("content"), list):
        out["content"] = []
    if isinstance(out.get("reasoningText"), str):
        out["reasoningText"] = ""
    out["response"] = _response(step.get("response"), include_messages=False)
    return out


def _typed(entries: list[Any], kind: str, *, dynamic: bool) -> list[Any]:
    # Mastra filters the stored payloads on ``type`` and ``payload.dynamic``, which payloads do
    # not carry: kept as it is so the snapshots stay byte-identical (in practice always empty).
    return [
        e
        for e in entries
        if isinstance(e, Mapping)
        and e.get("type") == kind
        and _mapping(e.get("payload")).get("dynamic") is dynamic
    ]


class AgentRunTracker:
    """The state of every sub-agent run seen in one stream, keyed by the sub-run's id."""

    def __init__(self, now: Callable[[], datetime]) -> None:
        self._now = now
        self._runs: dict[str, dict[str, Any]] = {}
        self._offsets: dict[str, tuple[int, int]] = {}

    def _new_run(self, agent_id: Any = "") -> dict[str, Any]:
        return {
            "id": agent_id,
            "object": None,
            "finishReason": None,
            "usage": None,
            "warnings": [],
            "text": "",
            "reasoning": [],
            "sources": [],
            "files": [],
            "toolCalls": [],
            "pendingToolCalls": [],
            "toolResults": [],
            "toolErrors": [],
            "request": {},
            "response": {"id": "", "timestamp": format_date(self._now()), "modelId": "", "messages": []},
            "steps": [],
            "status": "running",
        }

    def _run(self, run_id: str) -> dict[str, Any]:
        run = self._runs.get(run_id)
        if run is None:
            # Resumed streams have no ``start``: the state begins with the first chunk seen.
            run = self._runs[run_id] = self._new_run()
        return run

    def update(self, leaf: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """Fold one sub-agent chunk (wire dict) in; the parts it yields as ``(type, {id, data})``."""
        run_id = leaf.get("runId")
        if not isinstance(run_id, str):
            return []
        kind = leaf.get("type")
        p = _mapping(leaf.get("payload"))
        step: tuple[int, dict[str, Any]] | None = None
        if kind == "start":
            self._runs[run_id] = self._new_run(p.get("id", ""))
            self._offsets.pop(run_id, None)
        elif kind == "step-finish":
            step = self._step_finish(run_id, p)
        elif kind == "finish":
            self._finish(run_id, p)
        elif not self._content(run_id, kind, p, leaf):
            return []
        run = self._runs[run_id]
        finished = kind == "finish"
        data = {**run, "response": _response(run["response"], include_messages=finished)}
        data["steps"] = [_step_view(s, detailed=finished) for s in run["steps"]]
        parts = [("data-tool-agent", {"id": run_id, "data": to_jsonable(data)})]
        if step is not None:
            index, detail = step
            body = {"runId": run_id, "stepIndex": index, "step": _step_view(detail, detailed=True)}
            parts.append(("data-tool-agent-step", {"id": f"{run_id}:{index}", "data": to_jsonable(body)}))
        return parts

    def _content(self, run_id: str, kind: Any, p: Mapping[str, Any], leaf: Mapping[str, Any]) -> bool:
        """Text, reasoning, sources, files, tool calls/results/errors, objects; ``False``: ignored."""
        if kind not in _CONTENT:
            return False
        run = self._run(run_id)
        if kind == "text-delta":
            run["text"] = run["text"] + str(p.get("text", ""))
        elif kind == "reasoning-delta":
            run["reasoning"] = [*run["reasoning"], p.get("text", "")]
        elif kind == "source":
            run["sources"] = [*run["sources"], dict(p)]
        elif kind == "file":
            run["files"] = [*run["files"], dict(p)]
        elif kind == "tool-call":
            run["toolCalls"] = [*run["toolCalls"], dict(p)]
            run["pendingToolCalls"] = [*run["pendingToolCalls"], dict(p)]
        elif kind in ("tool-result", "tool-error"):
            call_id = p.get("toolCallId")
            run["pendingToolCalls"] = [c for c in run["pendingToolCalls"] if c.get("toolCallId") != call_id]
            key = "toolResults" if kind == "tool-result" else "toolErrors"
            run[key] = [*run[key], dict(p)]
        else:  # object, object-result
            run["object"] = leaf.get("object")
        return True

    def _step_finish(self, run_id: str, p: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        run = self._run(run_id)
        text_at, reasoning_at = self._offsets.get(run_id, (0, 0))
        step_result, output, metadata = (
            _mapping(p.get("stepResult")),
            _mapping(p.get("output")),
            _mapping(p.get("metadata")),
        )
        reasoning = run["reasoning"][reasoning_at:]
        response_extra = _mapping(p.get("response"))
        timestamp = metadata.get("timestamp") or format_date(self._now())
        step = {k: v for k, v in run.items() if k != "steps"}
        step.update(
            text=run["text"][text_at:],
            reasoning=reasoning,
            pendingToolCalls=[],
            stepType="initial" if not run["steps"] else "tool-result",
            reasoningText="".join(str(r) for r in reasoning),
            staticToolCalls=_typed(run["toolCalls"], "tool-call", dynamic=False),
            dynamicToolCalls=_typed(run["toolCalls"], "tool-call", dynamic=True),
            staticToolResults=_typed(run["toolResults"], "tool-result", dynamic=False),
            dynamicToolResults=_typed(run["toolResults"], "tool-result", dynamic=True),
            finishReason=step_result.get("reason"),
            usage=output.get("usage"),
            warnings=step_result.get("warnings") or [],
            response={
                **run["response"],
                "id": p.get("id") or "",
                "timestamp": timestamp,
                "modelId": metadata.get("modelId") or metadata.get("model") or "",
                **response_extra,
                "messages": response_extra.get("messages", run["response"].get("messages", [])),
            },
        )
        index = len(run["steps"])
        run.update(
            sources=[],
            files=[],
            toolCalls=[],
            pendingToolCalls=[],
            toolResults=[],
            usage=output.get("usage"),
            warnings=step_result.get("warnings") or [],
            steps=[*run["steps"], step],
        )
        self._offsets[run_id] = (len(run["text"]), len(run["reasoning"]))
        return index, step

    def _finish(self, run_id: str, p: Mapping[str, Any]) -> None:
        run = self._run(run_id)
        step_result, output = _mapping(p.get("stepResult")), _mapping(p.get("output"))
        run["finishReason"] = step_result.get("reason", p.get("finishReason"))
        run["usage"] = output.get("usage", p.get("usage"))
        warnings = step_result.get("warnings")
        if warnings is None:
            run.pop("warnings", None)  # JSON drops Mastra's ``undefined``
        else:
            run["warnings"] = warnings
        run["status"] = "finished"
        response = p.get("response")
        if isinstance(response, Mapping):
            run["response"] = {**run["response"], **response}


_CONTENT = frozenset(
    {
        "text-delta",
        "reasoning-delta",
        "source",
        "file",
        "tool-call",
        "tool-result",
        "tool-error",
        "object",
        "object-result",
    }
)
