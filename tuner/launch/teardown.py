"""However a command ends, the engines it started end with it."""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

from tuner.launch.base import Launcher

if TYPE_CHECKING:
    from sys import UnraisableHookArgs

log = logging.getLogger(__name__)


@contextmanager
def guarded(*launchers: Launcher) -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, and on the way out, however the run ends, every engine this
    process started and still holds is removed: each trial tears its engine down, and this
    sweep also catches one that an interrupt hit between its start and its teardown."""
    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(SIGNALLED)

    previous = signal.signal(signal.SIGTERM, handler)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = functools.partial(raise_again, previous_hook)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut this
        sys.unraisablehook = previous_hook
        try:
            for launcher in launchers:
                for item in launcher.cleanup_own():
                    log.warning("removed %s, left running by an interrupted trial", item)
        finally:
            signal.signal(signal.SIGTERM, previous)


SIGNALLED = "SIGTERM"


def raise_again(previous: Callable[[UnraisableHookArgs], object],
                unraisable: UnraisableHookArgs) -> None:
    """A signal handler's exception raised while the main thread ran a garbage collector's
    callback or a ``__del__`` is printed and dropped ("Exception ignored in ..."), and the
    run would go on as if never signalled (SQLAlchemy's weakref callbacks caught one in
    three SIGTERMs of a study starting its engine). Send the signal again, from a thread, so
    that it lands once that callback has returned."""
    exc = unraisable.exc_value
    if isinstance(exc, KeyboardInterrupt) and exc.args == (SIGNALLED,):
        log.debug("SIGTERM arrived inside %r, where it cannot stop the run; sent again",
                  unraisable.object)
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGTERM)).start()
        return
    previous(unraisable)
