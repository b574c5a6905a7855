"""Run a synchronous executor on its own daemon thread.

Python cannot stop a thread. A sync tool that outlives its task (timeout or cancel) keeps running;
on a daemon thread of its own it neither occupies a slot of the event loop's shared default executor
nor keeps the interpreter from exiting.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["run_in_daemon_thread"]


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # the awaiting task was cancelled: nobody wants the outcome any more
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


async def run_in_daemon_thread(fn: Callable[..., Any], *args: Any, name: str) -> Any:
    """``await`` ``fn(*args)`` run on a new daemon thread (with the caller's context variables)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def target() -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            value = context.run(fn, *args)
        except BaseException as exc:  # handed to the awaiting task, whatever it is
            error = exc
        try:
            loop.call_soon_threadsafe(_settle, future, value, error)
        except RuntimeError:  # the loop is closed: the caller is long gone
            pass

    threading.Thread(target=target, name=name, daemon=True).start()
    return await future
