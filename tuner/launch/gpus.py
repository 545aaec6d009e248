"""A pool of GPUs shared by trials: each trial gets a disjoint set of devices.

A device is held by an exclusive ``flock`` on its own lock file, so the pool is
safe across threads of one tuner and across tuner processes on the same host,
and a tuner that dies releases its devices with its file descriptors.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path
from types import TracebackType

from tuner.errors import TunerError


class GpuLease:
    """Devices held until :meth:`release` (or the end of a ``with`` block)."""

    def __init__(self, devices: list[int], fds: list[int]) -> None:
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
    def __init__(self, devices: list[int], lock_dir: Path) -> None:
        self.devices = sorted(devices)
        self.lock_dir = lock_dir
        lock_dir.mkdir(parents=True, exist_ok=True)
        self._local = threading.Lock()

    def _try(self, device: int) -> int | None:
        fd = os.open(self.lock_dir / f"gpu-{device}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    def try_acquire(self, count: int) -> GpuLease | None:
        """``count`` free devices now, or None. Never holds a partial set."""
        if count > len(self.devices):
            raise TunerError(f"a configuration needs {count} GPUs; this host has "
                             f"{len(self.devices)}")
        with self._local:
            got: list[tuple[int, int]] = []
            for device in self.devices:
                fd = self._try(device)
                if fd is not None:
                    got.append((device, fd))
                    if len(got) == count:
                        return GpuLease([d for d, _ in got], [f for _, f in got])
            for _, fd in got:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            return None

    def acquire(self, count: int, *, timeout_s: float | None = None,
                poll_s: float = 0.5) -> GpuLease:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            lease = self.try_acquire(count)
            if lease is not None:
                return lease
            if deadline is not None and time.monotonic() > deadline:
                raise TunerError(f"no {count} free GPUs within {timeout_s:.0f}s")
            time.sleep(poll_s)
