"""A pool of GPUs shared by trials: each trial gets a disjoint set of devices.

A device is held by an exclusive ``flock`` on its own lock file, so the pool is
safe across threads of one tuner and across tuner processes on the same host,
and a tuner that dies releases its devices with its file descriptors. Lock files
are named by GPU UUID in a host-local folder (``LOCK_DIR``, not a home that NFS
may share between hosts, where one host's GPU 0 would block another's) that every
user of the host may use. Before a device is leased, ``busy`` says whether another
job holds it (memory in use, compute processes): such a GPU is passed over, as an
engine started on it would fail for lack of memory and be scored as an OOM.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from tuner.core import TunerError

log = logging.getLogger(__name__)

LOCK_DIR = Path(tempfile.gettempdir()) / "tuner-gpu-locks"
"""Host-local (``/tmp``), shared by every user of the host (mode 1777, lock files 0644: ``flock``
works on a descriptor opened read-only, so another user's tuner can take a lock file this
user created)."""
Busy = Callable[[], dict[str, str]]
"""Device -> why another job holds it, for the devices that are busy now."""


class GpuLease:
    """Devices held until :meth:`release` (or the end of a ``with`` block)."""

    def __init__(self, devices: list[str], fds: list[int]) -> None:
        self.devices = devices
        self._fds = fds

    def release(self) -> None:
        for fd in self._fds:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        self._fds = []

    def __enter__(self) -> GpuLease:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


class GpuPool:
    """``devices``: GPU UUIDs (``Gpu.uuid``), the names launchers hand to CUDA and Docker."""

    def __init__(self, devices: Sequence[str], lock_dir: Path = LOCK_DIR, *,
                 busy: Busy | None = None) -> None:
        self.devices = list(devices)
        self.lock_dir = lock_dir
        self.busy = busy
        shared_folder(lock_dir)
        self._local = threading.Lock()
        self._said: dict[str, str] = {}

    def _try(self, device: str) -> int | None:
        path = self.lock_dir / f"gpu-{device}.lock"
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
        with contextlib.suppress(OSError):  # whatever the umask; another user's file stays
            os.fchmod(fd, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    def _busy_now(self) -> dict[str, str]:
        taken = {} if self.busy is None else self.busy()
        for device, why in taken.items():
            if self._said.get(device) != why and device in self.devices:
                log.warning("GPU %s is in use by another job (%s); not leasing it", device, why)
        self._said = dict(taken)
        return taken

    def try_acquire(self, count: int) -> GpuLease | None:
        """``count`` free devices now, or None. Never holds a partial set."""
        if count > len(self.devices):
            raise TunerError(f"a configuration needs {count} GPUs; this host has "
                             f"{len(self.devices)}")
        with self._local:
            got: list[tuple[str, int]] = []
            taken: dict[str, str] | None = None
            for device in self.devices:
                fd = self._try(device)
                if fd is None:
                    continue
                if taken is None:  # asked once, and only when a device is free of our locks
                    taken = self._busy_now()
                if device in taken:
                    _unlock(fd)
                    continue
                got.append((device, fd))
                if len(got) == count:
                    return GpuLease([d for d, _ in got], [f for _, f in got])
            for _, fd in got:
                _unlock(fd)
            return None

    def acquire(self, count: int, *, timeout_s: float | None = None,
                poll_s: float = 0.5) -> GpuLease:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            lease = self.try_acquire(count)
            if lease is not None:
                return lease
            if deadline is not None and time.monotonic() > deadline:
                others = "".join(f"; {d}: {why}" for d, why in self._said.items())
                raise TunerError(f"no {count} free GPUs within {timeout_s:.0f}s{others}")
            time.sleep(poll_s)


def _unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


def shared_folder(path: Path) -> None:
    """Make ``path`` a folder every user of the host may create lock files in (sticky, 1777,
    as /tmp); one made by another user is used as it is."""
    path.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(PermissionError):
        if path.stat().st_uid == os.getuid():
            path.chmod(0o1777)
