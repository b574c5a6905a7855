"""``agentstream workflow run|resume``: run a workflow (or resume a suspended run) and show its stream."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
from typing import IO, Any

from ._args import Parser
from ._errors import CLIError, UsageError

__all__ = ["add_parser", "resume", "run"]

_SPEC_HELP = (
    "'demo' (the demo workflow publish-article) or module:attr naming a Workflow, a Mastra, or a "
    "zero-argument function returning one"
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "workflow",
        help="run a workflow, or resume a suspended run",
        description="Run a workflow and stream its steps, or resume a run that suspended.",
    )
    commands = parser.add_subparsers(
        dest="workflow_command", metavar="{run,resume}", required=True, parser_class=Parser
    )
    start = commands.add_parser(
        "run",
        help="run a workflow on --input",
        description=(
            "Run a workflow on the JSON --input and show each step as it starts and ends (an agent step's "
            "text streams). A run that suspends prints the command that resumes it; keep its state "
            "across processes with --db (or $AGENTSTREAM_DB). Exit code 1 if the run fails."
        ),
    )
    start.add_argument("spec", metavar="WORKFLOW", help=_SPEC_HELP)
    start.add_argument("--input", required=True, metavar="JSON", help="the workflow's input data, as JSON")
    start.add_argument("--run-id", metavar="ID", help="the run's id (default: a new UUID)")
    _common(start)
    start.set_defaults(func=run)
    again = commands.add_parser(
        "resume",
        help="resume a suspended run",
        description="Resume a suspended run with --resume-data (the step runs again with it) and show the rest.",
    )
    again.add_argument("spec", metavar="WORKFLOW", help=_SPEC_HELP)
    again.add_argument("--run-id", required=True, metavar="ID", help="the suspended run's id")
    again.add_argument("--step", metavar="STEP", help="the suspended step (default: the only one)")
    again.add_argument(
        "--resume-data", required=True, metavar="JSON", help="the data to resume with, as JSON"
    )
    _common(again)
    again.set_defaults(func=resume)
    return parser


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workflow", metavar="ID", help="which workflow of a Mastra (default: its only one)")
    parser.add_argument(
        "--db", metavar="PATH", help="SQLite file holding the runs (default: $AGENTSTREAM_DB; in memory)"
    )
    parser.add_argument("--jsonl", action="store_true", help="write every chunk as a JSON line instead")
    parser.add_argument(
        "--model", help="model of the demo workflow's agent (default: $AGENTSTREAM_MODEL or demo)"
    )


def _json(option: str, value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{option} is not valid JSON ({exc.msg} at character {exc.pos}): {value[:80]!r}"
        ) from None


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    """``(mastra, workflow)`` for the command line's WORKFLOW / --workflow / --db."""
    from agentstream import Mastra
    from agentstream._app import AppLoadError, load_workflow_target
    from agentstream.storage import SQLiteStore
    from agentstream.workflows import Workflow

    db = args.db or os.environ.get("AGENTSTREAM_DB") or None
    storage = SQLiteStore(db) if db else None
    if args.spec == "demo":
        from agentstream._demo_workflow import demo_workflow

        model = args.model or os.environ.get("AGENTSTREAM_MODEL") or "demo"
        workflow = demo_workflow(model)
        return Mastra(workflows={workflow.id: workflow}, storage=storage), workflow
    try:
        target = load_workflow_target(args.spec)
    except AppLoadError as exc:
        raise (UsageError if exc.usage else CLIError)(str(exc)) from exc
    if isinstance(target, Workflow):
        return Mastra(workflows={target.id: target}, storage=storage), target
    if storage is not None:
        raise UsageError(f"{args.spec} is a Mastra with its own storage; drop --db")
    workflows = target.get_workflows()
    if args.workflow:
        try:
            return target, target.get_workflow(args.workflow)
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
    if len(workflows) != 1:
        raise UsageError(
            f"{args.spec} has {len(workflows)} workflows ({', '.join(sorted(workflows)) or 'none'}); pick one with --workflow"
        )
    return target, next(iter(workflows.values()))


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Printer:
    """The human-readable view: one line per step event, an agent step's text as it streams."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.in_text = False

    def _line(self, text: str) -> None:
        if self.in_text:
            self.out.write("\n")
            self.in_text = False
        self.out.write(text + "\n")
        self.out.flush()

    def show(self, chunk: Any) -> None:
        from agentstream.chunks import DataChunk, chunk_to_dict

        kind = chunk.type
        data = chunk_to_dict(chunk)
        payload = data.get("payload", {})
        if kind == "workflow-step-start":
            self._line(f"▶ {payload['id']}")
        elif kind == "workflow-step-result":
            if payload["status"] == "failed":
                error = payload.get("error", {})
                self._line(f"✗ {payload['id']}: {error.get('name', 'Error')}: {error.get('message', '')}")
            else:
                self._line(f"✓ {payload['id']} → {_short(payload.get('output'))}")
        elif kind == "workflow-step-suspended":
            self._line(f"⏸ {payload['id']} suspended: {_short(payload.get('suspendPayload'))}")
        elif kind == "workflow-step-output":
            self._output(payload.get("output"))
        elif kind == "workflow-step-progress":
            self._line(f"  · {payload['id']}: {payload['completedCount']}/{payload['totalCount']}")
        elif isinstance(chunk, DataChunk):
            self._line(f"  · {chunk.type}: {_short(chunk_to_dict(chunk).get('data'))}")

    def _output(self, output: Any) -> None:
        if isinstance(output, dict) and output.get("from") == "AGENT":
            if output.get("type") == "text-delta":
                if not self.in_text:
                    self.out.write("  ")
                self.out.write(str(output["payload"].get("text", "")).replace("\n", "\n  "))
                self.out.flush()
                self.in_text = True
            elif output.get("type") == "tool-call":
                self._line(
                    f"  · tool {output['payload'].get('toolName')}({_short(output['payload'].get('args'), 80)})"
                )
            return
        self._line(f"  · {_short(output)}")

    def end(self) -> None:
        if self.in_text:
            self.out.write("\n")
            self.in_text = False
        self.out.flush()


async def _show(args: argparse.Namespace, mastra: Any, workflow: Any, output: Any) -> int:
    from agentstream.chunks import encode_chunk

    printer = _Printer(sys.stdout)
    async for chunk in output.full_stream:
        if args.jsonl:
            sys.stdout.buffer.write(encode_chunk(chunk) + b"\n")
            sys.stdout.buffer.flush()
        else:
            printer.show(chunk)
    printer.end()
    resumed = getattr(args, "resume_data", None) is not None
    try:
        result = await output.result
    except Exception as exc:
        raise CLIError(_failed(output.run_id, workflow, exc, resumed)) from exc
    if result.status == "failed":
        raise CLIError(_failed(output.run_id, workflow, result.error, resumed))
    if args.jsonl:
        return 0
    if result.status == "suspended":
        step = result.suspended[0][0]
        _print(f"workflow {workflow.id} run {output.run_id}: suspended at {step}")
        _print("resume: " + _resume_command(args, output.run_id, step, workflow))
        fields = _fields(workflow.steps[step].resume_schema)
        if fields:
            _print(f"resume data: {fields}")
        _print(
            "note: a step that fails on its resume data fails the run for good (it cannot be resumed again)"
        )
        if mastra.storage.__class__.__name__ == "InMemoryStore":
            _print("note: the run is kept in memory only; pass --db FILE to resume it from another command")
    else:
        _print(f"workflow {workflow.id} run {output.run_id}: {result.status} → {_short(result.result, 400)}")
    return 0


def _failed(run_id: str, workflow: Any, error: Any, resumed: bool) -> str:
    """The failure in one line: the error with its type (a bare ``KeyError`` says only ``'key'``),
    and after a resume what the failed run leaves behind."""
    text = f"run {run_id} of workflow {workflow.id!r} failed: {_error_text(error)}"
    if resumed:
        text += (
            "; the run is failed for good (its snapshot stays, status failed, and cannot be resumed "
            "again): start a new one with `agentstream workflow run`"
        )
    return text


def _error_text(error: Any) -> str:
    name = getattr(error, "name", None)
    name = name if isinstance(name, str) and name else type(error).__name__
    if isinstance(error, KeyError) or name == "KeyError":
        key = error.args[0] if isinstance(error, KeyError) and error.args else str(error).strip("'\"")
        return f"KeyError: the step read the key {key!r}, which its data does not have"
    message = str(error)
    if not message:
        return name
    return message if message.startswith(f"{name}:") else f"{name}: {message}"


def _resume_command(args: argparse.Namespace, run_id: str, step: str, workflow: Any) -> str:
    schema = workflow.steps[step].resume_schema
    example = json.dumps(_example(schema)) if isinstance(schema, dict) else "{}"
    parts = [
        "agentstream",
        "workflow",
        "resume",
        args.spec,
        "--run-id",
        run_id,
        "--step",
        step,
        "--resume-data",
        example,
    ]
    db = args.db or os.environ.get("AGENTSTREAM_DB")
    if db:
        parts[4:4] = ["--db", db]
    return shlex.join(parts)


def _fields(schema: Any) -> str:
    """``approved: boolean (required), note: string (optional)`` for the resume schema's fields."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return ""
    required = schema.get("required") or []
    return ", ".join(
        f"{name}: {_kind(sub)} ({'required' if name in required else 'optional'})"
        for name, sub in properties.items()
    )


def _kind(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("enum"), list):
        return " | ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type")
    return "|".join(kind) if isinstance(kind, list) else str(kind or "any")


def _example(schema: Any, name: str = "value") -> Any:
    """A placeholder of the schema's type: every property (required and optional), enums' first
    value, defaults where given, strings as ``<name>``."""
    if not isinstance(schema, dict):
        return None
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), None) if isinstance(kind, list) else kind
    properties = schema.get("properties")
    if kind == "object" or (kind is None and isinstance(properties, dict)):
        items = properties if isinstance(properties, dict) else {}
        return {key: _example(sub, key) for key, sub in items.items()}
    if kind == "array":
        item = _example(schema.get("items"), name)
        return [] if item is None else [item]
    return {"boolean": True, "number": 0, "integer": 0, "string": f"<{name}>"}.get(str(kind))


def _print(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def _run(args: argparse.Namespace) -> int:
    input_data = _json("--input", args.input)
    mastra, workflow = _load(args)
    from agentstream.workflows import WorkflowInputValidationError

    async with mastra:
        run_ = await workflow.create_run(args.run_id)
        if run_.status != "pending":
            raise UsageError(
                f"run {args.run_id} of workflow {workflow.id!r} already exists ({run_.status}); pick another --run-id"
            )
        try:
            run_.check_input(input_data)  # a usage error, before the run's stream starts
        except WorkflowInputValidationError as exc:
            raise UsageError(f"--input: {exc}") from exc
        output = run_.stream(input_data=input_data)
        try:
            return await _show(args, mastra, workflow, output)
        finally:
            if run_.status == "running":  # interrupted: stop the run before the store closes
                await run_.cancel()


async def _resume(args: argparse.Namespace) -> int:
    data = _json("--resume-data", args.resume_data)
    mastra, workflow = _load(args)
    from agentstream.workflows import WorkflowResumeError

    async with mastra:
        run_ = await workflow.create_run(args.run_id)
        if run_.status == "pending":
            where = (
                "the given --db"
                if (args.db or os.environ.get("AGENTSTREAM_DB"))
                else "memory (pass --db FILE)"
            )
            raise CLIError(f"no run {args.run_id} of workflow {workflow.id!r} in {where}")
        try:
            output = run_.resume_stream(step=args.step, resume_data=data)
        except WorkflowResumeError as exc:
            raise CLIError(str(exc)) from exc
        try:
            return await _show(args, mastra, workflow, output)
        finally:
            if run_.status == "running":  # interrupted: stop the run before the store closes
                await run_.cancel()


def run(args: argparse.Namespace) -> int:
    """``agentstream workflow run``."""
    return asyncio.run(_run(args))


def resume(args: argparse.Namespace) -> int:
    """``agentstream workflow resume``."""
    return asyncio.run(_resume(args))
