"""However a command ends, the engines it started end with it."""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from tuner.launch.base import Launcher

log = logging.getLogger(__name__)


@contextmanager
def guarded(*launchers: Launcher) -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, and on the way out, however the run ends, every engine this
    process started and still holds is removed: each trial tears its engine down, and this
    sweep also catches one that an interrupt hit between its start and its teardown."""
    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut this
        try:
            for launcher in launchers:
                for item in launcher.cleanup_own():
                    log.warning("removed %s, left running by an interrupted trial", item)
        finally:
            signal.signal(signal.SIGTERM, previous)
