"""The agent's side of human in the loop: which calls wait for approval, keeping a run that
suspended, and the source of a leg that resumes one (`Agent.approve_tool_call`,
`Agent.decline_tool_call`, `Agent.resume_stream`). The loop's side is `_suspension`."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..chunks import Chunk, to_jsonable
from ..tools import Tool, ToolInputValidationError
from ._hooks import PendingToolCall
from ._options import RESUME_OPTIONS
from ._suspension import ApprovalPolicy, ResumeDecision, ResumeError, ResumePoint, RunSnapshots
from ._tool_runner import ApprovalCheck

if TYPE_CHECKING:
    from .._abort import AbortController
    from ..memory import Memory, MemoryScope
    from ..stream import ModelOutput
    from ..tracing import RunTrace
    from ._loop import RunConfig

__all__ = [
    "Leg",
    "SuspendRecorder",
    "approval_check",
    "auto_decision",
    "auto_resume_turn",
    "forces_serial_tools",
    "resumed_source",
    "stored_options",
]

log = logging.getLogger("agentstream.agent")

_STORED_OPTIONS = (
    "max_steps",
    "tool_choice",
    "active_tools",
    "model_settings",
    "tool_call_concurrency",
    "require_tool_approval",
    "memory",
)
"""Options a resumed leg takes from the suspended one unless it passes them again (JSON ones only;
callables such as ``on_finish`` or a ``require_tool_approval`` function are passed per leg)."""


def approval_check(policy: bool | ApprovalPolicy | None, tools: Mapping[str, Tool]) -> ApprovalCheck | None:
    """Whether a call waits for approval: the tool's ``require_approval``, then the run's
    ``require_tool_approval`` (``True`` or a callable ``(tool_name, args) -> bool``)."""
    if policy is not None and not isinstance(policy, bool) and not callable(policy):
        raise TypeError(
            "require_tool_approval must be True, False or a callable (tool_name, args) -> bool, "
            f"got {type(policy).__name__}"
        )
    if not policy and not any(t.require_approval for t in tools.values()):
        return None

    async def check(call: PendingToolCall, tool: Tool) -> bool:
        if tool.require_approval or policy is True:
            return True
        if callable(policy):
            answer = policy(call.name, call.exec_args)
            if inspect.isawaitable(answer):
                answer = await answer
            return bool(answer)
        return False

    return check


def forces_serial_tools(policy: Any, tools: Mapping[str, Tool]) -> bool:
    """Tools that need approval or may suspend run one at a time (Mastra: concurrency 1)."""
    return bool(policy) or any(t.may_suspend for t in tools.values())


def stored_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON options of a run kept with its snapshot for the leg that resumes it."""
    out: dict[str, Any] = {}
    for name in _STORED_OPTIONS:
        value = options.get(name)
        if value is None or (name == "require_tool_approval" and not isinstance(value, bool)):
            continue
        try:
            out[name] = to_jsonable(value)
        except (NotImplementedError, TypeError):
            log.debug("option %s is not JSON data; a resumed leg must pass it again", name)
    return out


class SuspendRecorder:
    """Keeps a run that suspends: the loop hands over its state (`RunConfig.on_suspend`), the
    output its accounting (`ModelOutput(on_suspended=...)`), and both go into one snapshot before
    the suspension chunk is delivered. With a memory thread, the thread remembers the run too."""

    def __init__(self, snapshots: RunSnapshots, *, run_id: str, options: dict[str, Any]) -> None:
        self.snapshots = snapshots
        self.run_id = run_id
        self.options = options
        self.scope: MemoryScope | None = None
        self.loop_state: dict[str, Any] | None = None
        self.suspended = False
        self.trace: RunTrace | None = None
        """The leg's spans, when traced: the snapshot keeps its reference for the next leg's link."""

    def start(self, run_id: str, options: dict[str, Any], scope: MemoryScope | None) -> None:
        """The run (or leg) this recorder keeps: its id, stored options and memory thread."""
        self.run_id, self.options, self.scope = run_id, options, scope

    def on_loop_suspend(self, state: dict[str, Any]) -> None:
        """`RunConfig.on_suspend`: the loop's state, just before the suspension chunk."""
        self.loop_state = state

    async def on_output_suspended(self, output_state: dict[str, Any]) -> None:
        """`ModelOutput(on_suspended=...)`: store the run (raises if the storage fails)."""
        if self.loop_state is None:
            # not this run's loop stopping (a suspension chunk a tool emitted itself): nothing to keep
            log.warning(
                "run %s: a suspension chunk the loop did not produce; the run is not kept", self.run_id
            )
            return
        loop = dict(self.loop_state)
        pending = loop.pop("pending")
        snapshot = {
            "version": 1,
            "pending": pending,
            "loop": loop,
            "output": output_state,
            "options": self.options,
        }
        reference = self.trace.reference() if self.trace is not None else None
        if reference is not None:
            snapshot["trace"] = reference
        scope = self.scope
        resource_id = scope.resource_id if scope is not None else None
        await self.snapshots.save(self.run_id, snapshot, resource_id=resource_id)
        if scope is not None:
            await self.snapshots.mark_thread(scope.thread_id, self.run_id, pending)
        self.suspended = True


Leg = tuple[
    "RunConfig", "MemoryScope | None", "Callable[[AsyncIterator[Chunk]], AsyncIterator[Chunk]] | None"
]
"""A resumed leg as `resumed_source` runs it: the loop's configuration, the memory thread, and what
wraps its chunks (its trace), if anything."""


async def _close(source: AsyncIterator[Chunk]) -> None:
    """Close an inner chunk source now (not whenever the garbage collector gets to it)."""
    aclose = getattr(source, "aclose", None)
    if aclose is not None:
        await aclose()


def decision_for(
    snapshot: Mapping[str, Any], decision: ResumeDecision, tools: Mapping[str, Tool]
) -> ResumeDecision:
    """``decision`` checked against the pending call (and its resume data validated)."""
    pending = snapshot["pending"]
    run_id = str(snapshot.get("runId"))
    call_id = decision.tool_call_id or pending["toolCallId"]
    if call_id != pending["toolCallId"]:
        raise ResumeError(
            f"run {run_id!r} waits for tool call {pending['toolCallId']!r} ({pending['toolName']}), "
            f"not {call_id!r}",
            run_id=run_id,
            status="mismatch",
        )
    kind = pending["kind"]
    action = decision.action
    if kind == "approval" and action == "resume":
        # Mastra's resumeStream answers an approval with {approved, reason?}
        data = decision.resume_data
        if not isinstance(data, Mapping) or not isinstance(data.get("approved"), bool):
            raise ToolInputValidationError(
                f"run {run_id!r} waits for approval of {pending['toolName']!r}: resume it with "
                '{"approved": true | false, "reason"?: str} or use approve_tool_call / decline_tool_call '
                f"(got {data!r})"
            )
        reason = data.get("reason")
        action = "approve" if data["approved"] else "decline"
        return ResumeDecision(call_id, action, reason=reason if isinstance(reason, str) else None)
    if kind == "suspend" and action != "resume":
        raise ResumeError(
            f"run {run_id!r}: tool {pending['toolName']!r} suspended itself and waits for resume data; "
            "use resume_stream(resume_data, run_id=...), not approve / decline",
            run_id=run_id,
            status="mismatch",
        )
    if action == "resume":
        tool = tools.get(pending["toolName"])
        data = tool.validate_resume_data(decision.resume_data) if tool is not None else decision.resume_data
        return ResumeDecision(call_id, "resume", resume_data=data)
    return ResumeDecision(call_id, action, reason=decision.reason)


async def resumed_source(
    decision: ResumeDecision,
    *,
    tools: Mapping[str, Tool],
    output: Callable[[], ModelOutput],
    recorder: SuspendRecorder,
    leg_config: Callable[[Mapping[str, Any]], Leg],
    memory: Callable[[], Memory],
    run: Callable[[RunConfig], AsyncIterator[Chunk]],
    inputs: list[dict[str, Any]] | None = None,
) -> AsyncIterator[Chunk]:
    """The chunks of a leg that resumes a suspended run (see the module docstring).

    Load the snapshot and check the answer (before claiming, so that a wrong answer leaves the run
    waiting), build the leg from the snapshot (`leg_config`: its stored options, trace reference,
    loop state), claim the run, restore the output's accounting, then run the loop from the resume
    point. The run is marked finished when the leg ends, unless it suspended again.
    """
    snapshots = recorder.snapshots
    run_id = recorder.run_id
    snapshot = await snapshots.load(run_id)
    checked = decision_for(snapshot, decision, tools)
    config, scope, wrap = leg_config(snapshot)
    claimed = await snapshots.claim(run_id, snapshot)
    renewer = asyncio.create_task(_renew_lease(snapshots, run_id, claimed, lambda: not recorder.suspended))
    status = "failed"
    try:
        config.resume = ResumePoint.from_json(snapshot["loop"], checked)
        output().restore_state(snapshot["output"])
        config.results = lambda: output().accumulator  # the loop reads its step's text there
        source = run(config)
        if scope is not None:
            source = memory().remember(
                source,
                scope,
                config.prompt,
                inputs or [],
                message_id=config.message_id,
                load=False,
                resumed=True,
            )
        if wrap is not None:
            source = wrap(source)
        try:
            async for chunk in source:
                if chunk.type == "finish":
                    status = "finished"
                yield chunk
        finally:
            await _close(source)
    finally:
        # Cancelled, not awaited first: the run's end is stored before anything else can run (a
        # renewal still in flight is a compare-and-set on ``running``, so it cannot undo the end).
        renewer.cancel()
        if not recorder.suspended:
            try:
                await snapshots.finish(run_id, status)
                if scope is not None:
                    await snapshots.clear_thread(scope.thread_id, run_id)
            except Exception:
                log.exception("marking resumed run %s as %s failed", run_id, status)
        with contextlib.suppress(asyncio.CancelledError):
            await renewer


async def _renew_lease(
    snapshots: RunSnapshots, run_id: str, claimed: dict[str, Any], leg_running: Callable[[], bool]
) -> None:
    """Keep the claimed run's lease fresh while its leg runs (see ``_suspension``'s docs); never
    once the leg suspended the run again (another leg may claim it then)."""
    from ..storage import RUN_RENEW_MS  # the agent package does not import storage at load

    while True:
        await asyncio.sleep(RUN_RENEW_MS / 1000)
        if not leg_running():
            return
        try:
            if not await snapshots.renew(run_id, claimed):
                return  # no longer running: marked lost elsewhere, or the leg ended
        except Exception as exc:  # the store may be down for a moment: the next renewal retries
            log.warning("agent run %s: renewing its lease failed: %s", run_id, exc)


AUTO_RESUME_INSTRUCTIONS = """\
A tool call of the conversation is waiting for the user: {what}.
Tool: {tool}. Arguments: {args}.{payload}
Read the user's latest message and answer with the JSON object that the schema describes, built
only from what the user said.{approval}"""


async def auto_decision(
    agent: Any, pending: Mapping[str, Any], messages: Any, opts: Mapping[str, Any]
) -> ResumeDecision | None:
    """The answer a new user message gives to the thread's suspended run, read by the agent's model
    with structured output against the run's resume schema (Mastra's auto-resume); ``None`` when it
    cannot be read (no schema, model failure, no object)."""
    schema_text = pending.get("resumeSchema")
    if not isinstance(schema_text, str):
        log.warning(
            "run %s: the suspended tool has no resume_schema; starting a new turn", pending.get("runId")
        )
        return None
    approval = pending.get("kind") == "approval"
    instructions = AUTO_RESUME_INSTRUCTIONS.format(
        what="it needs the user's approval before it runs" if approval else "it asked the user for input",
        tool=pending.get("toolName"),
        args=json.dumps(pending.get("args"), ensure_ascii=False),
        payload=""
        if approval
        else f" It asked: {json.dumps(pending.get('suspendPayload'), ensure_ascii=False)}.",
        approval=" approved is true only if the user clearly agreed." if approval else "",
    )
    from ._agent import Agent  # a plain helper agent on the same model, without tools or memory

    reader = Agent(id=f"{agent.id}:auto-resume", instructions=instructions, model=agent.model)
    extra = {k: opts[k] for k in ("clock", "sleep", "model_settings", "abort_signal") if k in opts}
    try:
        result = await reader.generate(
            messages, structured_output={"schema": json.loads(schema_text)}, max_steps=1, **extra
        )
    except Exception:
        log.exception("run %s: reading the resume data from the user's message failed", pending.get("runId"))
        return None
    if result.object is None:
        return None
    return ResumeDecision(str(pending["toolCallId"]), "resume", resume_data=result.object)


def auto_resume_turn(
    agent: Any,
    messages: Any,
    opts: dict[str, Any],
    cancel: AbortController,
    recorder: SuspendRecorder,
) -> ModelOutput:
    """``stream(..., memory=..., auto_resume_suspended_tools=True)``: if the thread's last run is
    suspended (and still resumable), the new message answers it and the run goes on; otherwise a
    new turn starts. Decided when the output starts, so the output's ``run_id`` is set then."""
    from ..memory import resolve_memory_option
    from ._messages import to_prompt

    scope = resolve_memory_option(opts["memory"])
    run_id = str(opts.get("run_id") or uuid.uuid4())
    message_id = str(uuid.uuid4())
    holder: list[ModelOutput] = []

    async def source() -> AsyncIterator[Chunk]:
        inner: AsyncIterator[Chunk] | None = None
        pending = await recorder.snapshots.pending_for_thread(scope.thread_id)
        if pending is not None:
            try:
                await recorder.snapshots.load(str(pending["runId"]))
            except ResumeError:
                pending = None
        decision = await auto_decision(agent, pending, messages, opts) if pending is not None else None
        if pending is not None and decision is not None:
            holder[0].run_id = recorder.run_id = str(pending["runId"])
            explicit = {k: v for k, v in opts.items() if k in RESUME_OPTIONS}
            clock = opts.get("clock")
            inputs = to_prompt(messages, created_at=int(clock() if clock else time.time() * 1000))
            inner = agent._leg_source(  # ``opts`` were merged with the defaults already
                decision, explicit, cancel, recorder, message_id, lambda: holder[0], inputs, merged=opts
            )
        else:
            inner, _ = agent._turn_source(
                messages,
                {**opts, "run_id": run_id},
                cancel,
                recorder,
                message_id=message_id,
                results=lambda: holder[0].accumulator,
            )
        try:
            async for chunk in inner:
                yield chunk
        finally:
            await _close(inner)

    output: ModelOutput = agent._output(source(), opts, cancel, recorder, run_id, message_id)
    holder.append(output)
    return output
