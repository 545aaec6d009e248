"""A wake-up at a nanosecond deadline on the event loop, finer than the loop's own timers.

The loop's timers wait in ``epoll_wait``, whose timeout is whole milliseconds (asyncio rounds
up, uvloop's libuv counts in milliseconds from a cached time), so a send timed by them is up
to a millisecond late: at every rate from 100 to 1000 req/s the send-time p99 sat at about
1 ms (experiments/benchmarks/client_cost-scaling-f26m2.txt). A Linux ``timerfd`` armed at the
deadline on ``CLOCK_MONOTONIC`` (the clock of ``time.perf_counter_ns``) becomes readable at
that nanosecond, and the loop waits on it like on a socket: nothing blocks the loop and
nothing spins. Where there is no timerfd (not Linux, another clock) ``wait_until`` returns
at once and the caller falls back on the loop's timers.

Python 3.13 has ``os.timerfd_create``; before it the two calls go through libc (ctypes).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import sys
import time
from collections.abc import Callable

CLOCK_MONOTONIC = 1
TFD_TIMER_ABSTIME = 1
NS = 1_000_000_000


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _libc_timerfd() -> tuple[Callable[..., int], Callable[..., int]] | None:
    if not sys.platform.startswith("linux"):
        return None
    if time.get_clock_info("perf_counter").implementation != "clock_gettime(CLOCK_MONOTONIC)":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        create, settime = libc.timerfd_create, libc.timerfd_settime
    except (OSError, AttributeError):
        return None
    create.argtypes, create.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec), ctypes.c_void_p]
    settime.restype = ctypes.c_int
    return create, settime


_CALLS = _libc_timerfd()


def available() -> bool:
    """Whether ``wait_until`` waits on a timerfd here."""
    return _CALLS is not None


def _armed(deadline_ns: int) -> int:
    """A non-blocking timerfd that becomes readable at ``deadline_ns`` (perf_counter clock)."""
    assert _CALLS is not None, "only called when available()"
    create, settime = _CALLS
    fd = create(CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "timerfd_create failed")
    spec = _Itimerspec(_Timespec(0, 0), _Timespec(deadline_ns // NS, deadline_ns % NS))
    if settime(fd, TFD_TIMER_ABSTIME, ctypes.byref(spec), None) != 0:
        errno = ctypes.get_errno()
        os.close(fd)
        raise OSError(errno, "timerfd_settime failed")
    return fd


async def wait_until(deadline_ns: int) -> None:
    """Return at ``deadline_ns`` on the perf_counter clock (a past deadline: at once), waiting
    on a timerfd in the running loop; without one, return at once (the caller then waits on
    the loop's timers)."""
    if _CALLS is None or deadline_ns <= time.perf_counter_ns():
        return
    loop = asyncio.get_running_loop()
    fd = _armed(deadline_ns)
    fired: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not fired.done():
            fired.set_result(None)

    loop.add_reader(fd, ready)
    try:
        await fired
    finally:
        loop.remove_reader(fd)
        os.close(fd)
