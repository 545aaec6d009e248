"""The event loop a run goes on: uvloop's where it is installed (a quarter less CPU per
streamed token than asyncio's own, experiments/benchmarks/client_cost.py), else asyncio's.

Ctrl-C cancels the main task (what it measured can still be written) and ends as
KeyboardInterrupt; with ``sigterm=True`` SIGTERM does exactly the same (main thread only)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T], *, sigterm: bool = False) -> T:
    """``asyncio.run(main)`` on the fastest loop here; ``sigterm``: SIGTERM interrupts as
    Ctrl-C does."""
    if sigterm:
        main = _terminable(main)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency except on Windows
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


async def _terminable(main: Coroutine[Any, Any, T]) -> T:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    terminated: list[int] = []

    def on_sigterm() -> None:
        terminated.append(signal.SIGTERM)
        task.cancel()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    try:
        return await main
    except asyncio.CancelledError:
        if terminated:
            raise KeyboardInterrupt("SIGTERM") from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
