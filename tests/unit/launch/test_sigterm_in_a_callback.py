"""A SIGTERM whose KeyboardInterrupt is raised inside a garbage collector's callback or a
``__del__`` (where Python prints it and drops it) still stops the run: guarded() sends it
again. Seen for real: one in three SIGTERMs of a study starting its engine landed in
SQLAlchemy's weakref callback, and the study went on into its re-measurement."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from tests.unit.fakes.launcher import FakeLauncher
from tuner.launch import guarded


class SignalledWhileCollected:
    """Sends this process SIGTERM from its ``__del__``: the handler's exception is raised
    there, and dropped."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGTERM)
        for _ in range(1000):  # bytecode for the handler to run on, inside __del__
            pass


def test_an_interrupt_dropped_in_a_del_is_raised_again(capfd: pytest.CaptureFixture[str]
                                                       ) -> None:
    def run() -> None:
        with guarded(FakeLauncher()):
            doomed = SignalledWhileCollected()
            del doomed  # the interrupt is raised inside __del__ and dropped there
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                time.sleep(0.01)

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run()
    assert time.monotonic() - started < 4  # stopped, not run to its end
    assert "Exception ignored" not in capfd.readouterr().err


def test_other_unraisable_errors_go_to_the_hook_before(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    seen: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))

    class Broken:
        def __del__(self) -> None:
            raise ValueError("broken finaliser")

    with guarded(FakeLauncher()):
        broken = Broken()
        del broken
    assert [str(e) for e in seen] == ["broken finaliser"]
    assert sys.unraisablehook is not None
