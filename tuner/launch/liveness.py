"""Whether a measured engine still answers: a hung engine is found within a bound.

An engine can stop answering without exiting: a deadlock, a wedged accelerator, a process or
container stopped (SIGSTOP, a frozen cgroup). Its requests would wait for their own timeout
(``request_timeout_s``, minutes), step after step. While an engine is measured,
:func:`unless_hung` watches it: it is hung once, for ``silence_s``, no request brought a token
(``activity`` did not move), its health path did not answer and, where its launcher can tell,
its processes used no CPU to speak of. The measurement is then cancelled and
:class:`EngineHung` raised; the trial ends ``hung`` and its engine is stopped as every trial's
is. A busy engine whose health check waits behind its work (a server whose one HTTP
thread shares a core with its compute, or a long prompt's prefill that brings no token for a
while) is not hung while tokens arrive or it computes; an engine that exited is left to the
crash checks between steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx

from tuner.core import EngineHung
from tuner.launch.base import EngineHandle

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_POLL_S = 5.0
BUSY_SHARE = 0.1
"""An engine that used at least this share of a core between two looks is working."""


def poll_interval(silence_s: float) -> float:
    """How often the watch looks: four times within the bound, at most every five seconds."""
    return min(MAX_POLL_S, silence_s / 4)


async def unless_hung(work: Awaitable[T], handle: EngineHandle, health_path: str,
                      activity: Callable[[], int], silence_s: float) -> T:
    """``work``'s result, unless the engine hangs first: then ``work`` is cancelled and
    :class:`EngineHung` raised. ``activity`` counts what the engine has sent so far (tokens,
    answers); any change is a sign of life."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(watch_engine(handle, handle.base_url + health_path,
                                               activity, silence_s))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
        hung = watch.exception() if watch.done() and not task.done() else None
        if hung is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task  # it ends as it is cancelled: its own error is not the story
            raise hung
        return await task  # done, or the engine exited: the measurement tells its crash
    finally:
        for pending in (task, watch):
            pending.cancel()
        await asyncio.gather(task, watch, return_exceptions=True)


async def watch_engine(handle: EngineHandle, health_url: str, activity: Callable[[], int],
                       silence_s: float) -> None:
    """Return once the engine has exited (its crash is told elsewhere); raise
    :class:`EngineHung` once it has been silent for ``silence_s``."""
    loop = asyncio.get_running_loop()
    poll = poll_interval(silence_s)
    seen, last_sign, cpu = activity(), loop.time(), None
    async with httpx.AsyncClient(timeout=httpx.Timeout(poll, connect=min(poll, 2.0))) as http:
        while True:
            await asyncio.sleep(poll)
            moved = activity()
            if moved != seen:
                seen, last_sign, cpu = moved, loop.time(), None
                continue
            if await _answers(http, health_url):
                last_sign, cpu = loop.time(), None
                continue
            used, cpu = cpu, handle.cpu_seconds()  # asked only of an engine that is silent
            if cpu is not None and (used is None or cpu - used >= BUSY_SHARE * poll):
                if used is not None:  # it computes
                    last_sign = loop.time()
                continue  # (or a first look at its CPU: the next one tells)
            silent = loop.time() - last_sign
            if silent < silence_s:
                continue
            if handle.exit_code() is not None:
                return
            log.warning("engine at %s: no token and no answer from its health check for "
                        "%.0fs; it is hung", handle.base_url, silent)
            raise EngineHung(f"engine stopped answering: no token on any request and no answer "
                             f"from {health_url} for {silent:.0f}s (hang_timeout_s "
                             f"{silence_s:g})")


async def _answers(http: httpx.AsyncClient, url: str) -> bool:
    try:
        return (await http.get(url)).status_code == 200
    except httpx.HTTPError:
        return False
