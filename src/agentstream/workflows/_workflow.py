"""`create_workflow` and the `Workflow` builder: `.then`, `.parallel`, `.branch`, loops, `foreach`, sleeps,
`map`, nested workflows, `.commit()`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from .._validate import check_count, check_ms
from ..agent import Agent
from ..tools import Schema, Tool, json_schema_of
from ._errors import WorkflowDefinitionError
from ._step import Step, StepContext, create_step

if TYPE_CHECKING:
    from ..storage import Storage
    from ._checkpoint import Checkpoint
    from ._run import Run

__all__ = ["Condition", "RetryConfig", "Workflow", "create_workflow"]

Condition: TypeAlias = "Callable[[StepContext], Any]"
"""``condition(context) -> bool`` (async or plain); ``context.input_data`` is what it decides on."""

StepLike: TypeAlias = "Step | Workflow | Agent | Tool"


@dataclass(frozen=True)
class RetryConfig:
    """``retry_config={"attempts": n, "delay": ms}``: a failing step runs again up to ``attempts``
    more times, ``delay`` ms apart (a step's own ``retries`` overrides ``attempts``)."""

    attempts: int = 0
    delay: float = 0

    @classmethod
    def from_value(cls, value: RetryConfig | Mapping[str, Any] | None) -> RetryConfig:
        """Normalise ``None``, a dict ``{"attempts", "delay"}`` or a `RetryConfig`."""
        if value is None:
            return cls()
        if isinstance(value, RetryConfig):
            return value
        if not isinstance(value, Mapping):
            raise WorkflowDefinitionError(
                f"retry_config must be a dict {{'attempts', 'delay'}}, got {type(value).__name__}"
            )
        unknown = sorted(set(value) - {"attempts", "delay"})
        if unknown:
            raise WorkflowDefinitionError(
                f"retry_config: unknown key(s) {unknown}; expected 'attempts' and 'delay'"
            )
        attempts, delay = value.get("attempts", 0), value.get("delay", 0)
        try:
            check_count("retry_config.attempts", attempts)
            check_ms("retry_config.delay", delay)
        except ValueError as exc:
            raise WorkflowDefinitionError(str(exc)) from None
        return cls(attempts=attempts, delay=delay)


# ---------------------------------------------------------------------------------------- entries


@dataclass(frozen=True)
class StepEntry:
    step: Step
    # steps run by .then / .map are on Mastra's stepExecutionPath (their results drop `payload`)
    in_path: bool = True
    mapping: bool = False


@dataclass(frozen=True)
class ParallelEntry:
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class BranchEntry:
    branches: tuple[tuple[Condition, Step], ...]


@dataclass(frozen=True)
class LoopEntry:
    step: Step
    condition: Condition
    kind: str  # "dowhile" | "dountil"


@dataclass(frozen=True)
class ForeachEntry:
    step: Step
    concurrency: int


@dataclass(frozen=True)
class SleepEntry:
    id: str
    kind: str  # "sleep" | "sleepUntil"
    ms: float | None = None
    until: datetime | None = None
    fn: Callable[[StepContext], Any] | None = None


Entry: TypeAlias = "StepEntry | ParallelEntry | BranchEntry | LoopEntry | ForeachEntry | SleepEntry"


def _fn_text(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or repr(fn))


def _node(step: Step) -> dict[str, Any]:
    if step.component == "AGENT":
        return {"type": "agent", "id": step.id, "agentId": step.id, "description": step.description or ""}
    nested = step.workflow
    node = step.to_json()
    if nested is not None:
        node["component"] = "WORKFLOW"
        node["serializedStepFlow"] = nested.serialized_step_graph()
    return {"type": "step", "step": node}


def _entry_json(entry: Entry) -> dict[str, Any]:
    if isinstance(entry, StepEntry):
        return _node(entry.step)
    if isinstance(entry, ParallelEntry):
        return {"type": "parallel", "steps": [_node(s) for s in entry.steps]}
    if isinstance(entry, BranchEntry):
        return {
            "type": "conditional",
            "steps": [_node(s) for _, s in entry.branches],
            "serializedConditions": [
                {"id": f"{s.id}-condition", "fn": _fn_text(c)} for c, s in entry.branches
            ],
        }
    if isinstance(entry, LoopEntry):
        return {
            "type": "loop",
            "step": _node(entry.step),
            "serializedCondition": {"id": f"{entry.step.id}-condition", "fn": _fn_text(entry.condition)},
            "loopType": entry.kind,
        }
    if isinstance(entry, ForeachEntry):
        return {"type": "foreach", "step": _node(entry.step), "opts": {"concurrency": entry.concurrency}}
    if entry.until is not None or (entry.fn is not None and entry.ms is None):
        return {
            "type": "sleepUntil",
            "id": entry.id,
            "date": entry.until.isoformat() if entry.until else None,
        }
    return {"type": "sleep", "id": entry.id, "duration": entry.ms}


class Workflow:
    """A workflow (Mastra's ``createWorkflow``): steps chained with the builder methods, then `commit`.

    Each builder method returns the workflow itself. Steps are `Step` objects (`create_step`); an
    `Agent`, a `Tool` or another `Workflow` given in their place is wrapped with `create_step`. Step ids
    must be unique within a workflow.

    Runs: ``run = await workflow.create_run()``, then ``run.stream(input_data=...)`` or
    ``await run.start(input_data=...)``.
    """

    def __init__(
        self,
        *,
        id: str,
        description: str | None = None,
        input_schema: Schema | None = None,
        output_schema: Schema | None = None,
        state_schema: Schema | None = None,
        retry_config: RetryConfig | Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(id, str) or not id:
            raise WorkflowDefinitionError(f"a workflow needs a non-empty string id, got {id!r}")
        self.id = id
        self.description = description
        self.input_schema = input_schema
        self.output_schema = output_schema
        self.state_schema = state_schema
        self.retry_config = RetryConfig.from_value(retry_config)
        self.entries: list[Entry] = []
        self.steps: dict[str, Step] = {}
        self.committed = False
        self.mastra: Any = None
        self._storage: Storage | None = None
        self._as_step: Step | None = None
        self._graph: list[dict[str, Any]] | None = None

    # ------------------------------------------------------------------------------- building

    def _add(self, entry: Entry, steps: Iterable[Step]) -> Workflow:
        if self.committed:
            raise WorkflowDefinitionError(
                f"workflow {self.id!r} is committed; build a new workflow to add steps"
            )
        for step in steps:
            if step.id in self.steps and self.steps[step.id] is not step:
                raise WorkflowDefinitionError(
                    f"workflow {self.id!r}: two different steps have the id {step.id!r}"
                )
            if step.id == "input":
                raise WorkflowDefinitionError(
                    f"workflow {self.id!r}: 'input' is reserved and cannot be a step id"
                )
            self.steps[step.id] = step
        self.entries.append(entry)
        return self

    @staticmethod
    def _step(value: StepLike, where: str) -> Step:
        if isinstance(value, Step):
            return value
        if isinstance(value, (Workflow, Agent, Tool)):
            return create_step(value)
        raise WorkflowDefinitionError(
            f"{where}: expected a Step (create_step), a Workflow, an Agent or a Tool, got {type(value).__name__}"
        )

    def then(self, step: StepLike) -> Workflow:
        """Run `step` next, on the previous step's output."""
        s = self._step(step, "then()")
        return self._add(StepEntry(s), [s])

    def parallel(self, steps: Sequence[StepLike]) -> Workflow:
        """Run `steps` at once on the same input; the output is ``{step_id: output}``."""
        items = tuple(self._step(s, f"parallel()[{i}]") for i, s in enumerate(steps))
        if not items:
            raise WorkflowDefinitionError("parallel() needs at least one step")
        return self._add(ParallelEntry(items), items)

    def branch(self, branches: Sequence[tuple[Condition, StepLike]]) -> Workflow:
        """Run every step whose condition is true, at once; the output is ``{step_id: output}`` of those."""
        pairs = []
        for i, pair in enumerate(branches):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not callable(pair[0]):
                raise WorkflowDefinitionError(f"branch()[{i}]: expected a (condition, step) pair")
            pairs.append((pair[0], self._step(pair[1], f"branch()[{i}]")))
        if not pairs:
            raise WorkflowDefinitionError("branch() needs at least one (condition, step) pair")
        return self._add(BranchEntry(tuple(pairs)), [s for _, s in pairs])

    def dowhile(self, step: StepLike, condition: Condition) -> Workflow:
        """Run `step`, again on its own output while `condition(context)` holds (checked after each run)."""
        return self._loop(step, condition, "dowhile")

    def dountil(self, step: StepLike, condition: Condition) -> Workflow:
        """Run `step`, again on its own output until `condition(context)` holds (checked after each run)."""
        return self._loop(step, condition, "dountil")

    def _loop(self, step: StepLike, condition: Condition, kind: str) -> Workflow:
        if not callable(condition):
            raise WorkflowDefinitionError(
                f"{kind}(): condition must be callable, got {type(condition).__name__}"
            )
        s = self._step(step, f"{kind}()")
        return self._add(LoopEntry(s, condition, kind), [s])

    def foreach(self, step: StepLike, *, concurrency: int = 1) -> Workflow:
        """Run `step` on every item of the previous output (a list), `concurrency` at a time; the output
        is the list of results, in item order."""
        try:
            check_count("foreach(concurrency)", concurrency, minimum=1)
        except ValueError as exc:
            raise WorkflowDefinitionError(str(exc)) from None
        s = self._step(step, "foreach()")
        return self._add(ForeachEntry(s, concurrency), [s])

    def sleep(self, duration: float | Callable[[StepContext], Any]) -> Workflow:
        """Wait `duration` ms (or as many as `duration(context)` returns); the data passes through."""
        entry_id = f"sleep_{uuid.uuid4()}"
        if callable(duration):
            return self._add(SleepEntry(entry_id, "sleep", fn=duration), [])
        try:
            check_ms("sleep(duration)", duration)
        except ValueError as exc:
            raise WorkflowDefinitionError(str(exc)) from None
        return self._add(SleepEntry(entry_id, "sleep", ms=float(duration)), [])

    def sleep_until(self, date: datetime | Callable[[StepContext], Any]) -> Workflow:
        """Wait until `date` (an aware datetime, or what `date(context)` returns); the data passes through."""
        entry_id = f"sleep_{uuid.uuid4()}"
        if callable(date):
            return self._add(SleepEntry(entry_id, "sleepUntil", fn=date), [])
        if not isinstance(date, datetime) or date.tzinfo is None:
            raise WorkflowDefinitionError(f"sleep_until(): expected a timezone-aware datetime, got {date!r}")
        return self._add(SleepEntry(entry_id, "sleepUntil", until=date), [])

    def map(self, fn: Callable[[StepContext], Any], *, id: str | None = None) -> Workflow:
        """Turn the previous output into the next step's input with ``fn(context)`` (async or plain);
        ``context.get_step_result`` / ``get_init_data`` reach earlier data."""
        if not callable(fn):
            raise WorkflowDefinitionError(
                f"map(): expected a function of the step context, got {type(fn).__name__}"
            )
        step = Step(id=id or self._mapping_id(), execute=fn)
        return self._add(StepEntry(step, mapping=True), [step])

    def _mapping_id(self) -> str:
        # Mastra (packages/core/src/workflows/workflow.ts, map()): the workflow id and the ordinal of
        # this mapping in the flow, skipping ids already taken, so a workflow built again in another
        # process names its mappings alike and a snapshot taken there resumes here.
        ordinal = sum(1 for e in self.entries if isinstance(e, StepEntry) and e.mapping)
        while f"mapping_{self.id}_{ordinal}" in self.steps:
            ordinal += 1
        return f"mapping_{self.id}_{ordinal}"

    def commit(self) -> Workflow:
        """Finish building: no step can be added afterwards; a workflow must be committed to run."""
        if not self.entries:
            raise WorkflowDefinitionError(
                f"workflow {self.id!r} has no steps; add some with .then(...) before commit()"
            )
        self.committed = True
        return self

    # ------------------------------------------------------------------------------- running

    async def create_run(
        self,
        run_id: str | None = None,
        *,
        resource_id: str | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Any] | None = None,
        cancel_grace_ms: float = 2000,
        checkpoint: Checkpoint | None = None,
    ) -> Run:
        """A run of this workflow (Mastra's ``createRun``). With the `run_id` of a run saved in storage
        (e.g. suspended in another process), the run continues from its snapshot.

        ``clock`` (``() -> ms``) and ``sleep`` (``async (seconds)``) are injectable for tests;
        ``cancel_grace_ms``: how long ``run.cancel()`` lets a running step react to the abort signal
        before it is interrupted. ``checkpoint``: record each step so a re-run of this run after a
        crash does not run completed steps again (`agentstream.durable` gives one on DBOS).
        """
        from ._run import Run

        if not self.committed:
            raise WorkflowDefinitionError(
                f"workflow {self.id!r} is not committed; call .commit() before running it"
            )
        run = Run(
            self,
            run_id or str(uuid.uuid4()),
            resource_id=resource_id,
            clock=clock,
            sleep=sleep,
            cancel_grace_ms=cancel_grace_ms,
            checkpoint=checkpoint,
        )
        await run._load()
        return run

    def _fresh_run(
        self,
        run_id: str,
        *,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Any] | None = None,
    ) -> Run:
        """A run under ``run_id`` that starts from nothing, whatever is saved under that id: a nested
        workflow's run, started afresh each time its step executes (every loop iteration, every
        retry, the re-run of a step whose worker died), as Mastra re-runs a nested run under its id."""
        from ._run import Run

        return Run(self, run_id, resource_id=None, clock=clock, sleep=sleep, cancel_grace_ms=2000)

    @property
    def storage(self) -> Storage:
        """Where runs are saved: the storage of the `Mastra` this workflow is registered in, else a
        private in-memory store."""
        if self._storage is None:
            from ..storage import InMemoryStore

            self._storage = InMemoryStore()
        return self._storage

    def _register_mastra(self, mastra: Any) -> None:
        self.mastra = mastra
        self._storage = mastra.storage
        # Workflows used as steps live where their parent does (as Mastra registers them): their
        # runs are saved in the same storage, so a suspended child resumes in any process.
        for step in self.steps.values():
            if step.workflow is not None and step.workflow.mastra is None:
                step.workflow._register_mastra(mastra)

    def serialized_step_graph(self) -> list[dict[str, Any]]:
        """The step graph as Mastra serialises it (``serializedStepFlow``)."""
        if self.committed:
            if self._graph is None:
                self._graph = [_entry_json(e) for e in self.entries]
            return self._graph
        return [_entry_json(e) for e in self.entries]

    def describe(self) -> dict[str, Any]:
        """JSON description for listings: id, description, schemas, steps and the step graph."""
        out: dict[str, Any] = {"id": self.id, "name": self.id}
        if self.description:
            out["description"] = self.description
        if self.input_schema is not None:
            out["inputSchema"] = json_schema_of(self.input_schema)
        if self.output_schema is not None:
            out["outputSchema"] = json_schema_of(self.output_schema)
        out["steps"] = {
            sid: {"id": sid, **s.json_schemas(), "canSuspend": s.can_suspend} for sid, s in self.steps.items()
        }
        out["stepGraph"] = self.serialized_step_graph()
        return out

    def as_step(self) -> Step:
        """This workflow as a step of another workflow: runs to completion as one step; its steps
        stream as steps of the outer run (ids prefixed ``{this id}.``, see `nested_step`)."""
        if self._as_step is None:
            from ._nested import nested_step

            self._as_step = nested_step(self)
        return self._as_step

    def __repr__(self) -> str:
        return f"Workflow(id={self.id!r}, steps={list(self.steps)!r})"


def create_workflow(
    *,
    id: str,
    description: str | None = None,
    input_schema: Schema | None = None,
    output_schema: Schema | None = None,
    state_schema: Schema | None = None,
    retry_config: RetryConfig | Mapping[str, Any] | None = None,
) -> Workflow:
    """A new `Workflow` (Mastra's ``createWorkflow``): chain steps, then ``.commit()``.

    ``retry_config={"attempts": n, "delay": ms}`` (default no retries). ``input_schema`` checks the run's
    input (nothing runs on bad input: ``run.start`` raises a `WorkflowInputValidationError` naming the
    field, ``run.stream`` ends failed with it).
    """
    return Workflow(
        id=id,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        state_schema=state_schema,
        retry_config=retry_config,
    )
