"""``agentstream run --app MODULE:ATTR [--agent ID]``: the user's own agent, with every flag the demo
takes (``--approve`` / ``--decline`` / ``--resume``, ``--until-idle``, ``--goal``, ``--thread``)."""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from ._errors import CLIError, UsageError

__all__ = ["add_arguments", "app_agent"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help="your agent: a Mastra, an Agent, or a zero-argument function returning one (default: the demo)",
    )
    parser.add_argument(
        "--agent", metavar="ID", help="with --app: which of the Mastra's agents (needed when it has several)"
    )
    parser.add_argument(
        "--thread",
        metavar="ID",
        help="with --app: the memory thread to run in (so a second run remembers the first)",
    )
    parser.add_argument(
        "--resource", metavar="ID", help="with --thread: the thread's resource (default: cli)"
    )


def check_arguments(args: argparse.Namespace) -> None:
    """The flags that only mean something with ``--app``, refused without it (one line)."""
    if args.app is None:
        for flag, value in (
            ("--agent", args.agent),
            ("--thread", args.thread),
            ("--resource", args.resource),
        ):
            if value is not None:
                raise UsageError(f"{flag} applies to the agent of --app MODULE:ATTR; give --app too")
        return
    if args.model is not None:
        raise UsageError("--model sets the demo agent's model; the agent of --app runs on its own model")
    if args.resource is not None and args.thread is None:
        raise UsageError("--resource is the resource of a memory thread: give --thread ID too")
    if args.thread is not None and args.goal is not None:
        raise UsageError("--goal runs in a fresh thread of its own: drop --thread, or drop --goal")


def _pick(mastra: Any, args: argparse.Namespace) -> Any:
    agents: dict[str, Any] = mastra.get_agents()
    known = ", ".join(sorted(agents)) or "none"
    if args.agent is not None:
        if args.agent not in agents:
            raise UsageError(f"--agent {args.agent!r} is not an agent of {args.app} (agents: {known})")
        return agents[args.agent]
    if len(agents) != 1:
        if not agents:
            raise UsageError(f"{args.app} has no agents to run")
        raise UsageError(f"{args.app} has {len(agents)} agents ({known}): pick one with --agent ID")
    return next(iter(agents.values()))


async def app_agent(args: argparse.Namespace, options: dict[str, Any]) -> tuple[Any, Any]:
    """The agent of ``--app`` (and its Mastra, closed by the caller), ``options`` set for the flags."""
    from agentstream._app import AppLoadError, load_mastra

    try:
        mastra = load_mastra(args.app)
    except AppLoadError as exc:
        raise (UsageError if exc.usage else CLIError)(f"--app: {exc}") from exc
    agent = _pick(mastra, args)
    if args.thread is not None:
        options["memory"] = {"thread": args.thread, "resource": args.resource or "cli"}
    if args.goal is not None:
        await _set_goal(agent, args, options)
    return agent, mastra


async def _set_goal(agent: Any, args: argparse.Namespace, options: dict[str, Any]) -> None:
    """``--goal`` on the user's agent: its own ``goal`` settings if it has them, else judged by its
    own model (or ``--judge``), in a fresh thread of the Mastra's storage."""
    from agentstream.agent import GoalConfig

    if agent.goal is None:
        # A function, so the model is resolved when the judge runs (after the one-line model check).
        agent.goal = GoalConfig.from_value({"judge": args.judge or (lambda: agent.model)})
    thread = f"cli-{uuid.uuid4().hex[:12]}"  # a new objective per run, never an old one resumed
    await agent.set_objective(
        args.goal, thread_id=thread, resource_id="cli", max_runs=args.max_runs, judge_model_id=args.judge
    )
    options["memory"] = {"thread": thread, "resource": "cli"}
    options["max_steps"] = 5 * args.max_runs  # room for tool steps within every attempt
