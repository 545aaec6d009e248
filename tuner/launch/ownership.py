"""Which engines are ours, and which of ours are orphans.

Every engine process we start carries ``TUNER_OWNER_PID`` and
``TUNER_OWNER_STARTED`` (the tuner's pid and start time) in its environment,
which its children inherit. An engine whose owner is no longer alive was left
by a tuner that was killed; cleanup removes those and nothing else.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal

import psutil

log = logging.getLogger(__name__)

OWNER_PID = "TUNER_OWNER_PID"
OWNER_STARTED = "TUNER_OWNER_STARTED"
ENGINE_ID = "TUNER_ENGINE_ID"
"""One engine's own marker: its processes, wherever they moved (a worker that left the
process group, an orphan re-parented to init), carry it in their environment."""


def owner_marker() -> dict[str, str]:
    """The environment (or labels) that mark an engine as started by this process."""
    me = psutil.Process()
    return {OWNER_PID: str(me.pid), OWNER_STARTED: f"{me.create_time():.3f}"}


def is_mine(pid: str, started: str) -> bool:
    """Whether an engine marked (pid, started) was started by this process."""
    me = owner_marker()
    return (pid, started) == (me[OWNER_PID], me[OWNER_STARTED])


def owner_alive(pid: str, started: str) -> bool:
    try:
        proc = psutil.Process(int(pid))
        return f"{proc.create_time():.3f}" == started
    except (psutil.NoSuchProcess, ValueError):
        return False


def marked_processes(mine: bool = False) -> list[psutil.Process]:
    """Processes that carry our marker: whose owner is gone (orphans), or, with ``mine``,
    whose owner is this process."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            env = proc.environ()
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess, OSError):
            continue
        pid, started = env.get(OWNER_PID), env.get(OWNER_STARTED)
        if pid is None or started is None:
            continue
        if is_mine(pid, started) if mine else not owner_alive(pid, started):
            found.append(proc)
    return found


def processes_of_engine(engine_id: str) -> list[psutil.Process]:
    """Every live process that carries ``engine_id`` in its environment."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get(ENGINE_ID) == engine_id:
                found.append(proc)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess, OSError):
            continue
    return found


def kill_marked_processes(mine: bool = False) -> list[str]:
    """SIGKILL every orphan engine process (or, with ``mine``, every engine process of this
    tuner); return their descriptions."""
    killed = []
    for proc in marked_processes(mine):
        with contextlib.suppress(psutil.NoSuchProcess, ProcessLookupError):
            desc = f"pid {proc.pid} ({proc.name()})"
            os.kill(proc.pid, signal.SIGKILL)
            killed.append(desc)
            log.info("killed orphan engine process %s", desc)
    return killed
