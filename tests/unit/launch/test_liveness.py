"""A measured engine that stops answering (no token, no health answer) is found within its
bound and its measurement cancelled; one that streams tokens while its health check waits
behind its work, or that answers its health check, is not hung; one that exited is left to
the crash checks. The silent engine here is a socket that accepts connections and never
answers, as a stopped process's does; a real engine stopped by SIGSTOP mid-study is
tests/integration/test_faults.py."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tuner.core import EngineHung
from tuner.engines import Rendered
from tuner.launch.base import EngineHandle
from tuner.launch.liveness import unless_hung

SILENCE_S = 0.2


class Handle(EngineHandle):
    def __init__(self, base_url: str, log_path: Path) -> None:
        self.base_url, self.log_path = base_url, log_path
        self.rendered = Rendered(argv=["engine"])
        self.code: int | None = None

    def exit_code(self) -> int | None:
        return self.code

    def stop(self, grace_s: float = 20.0) -> None:
        self.code = -15


class Healthy(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def healthy() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Healthy)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class Work:
    """A measurement that takes ``seconds`` and notes whether it was cancelled."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.cancelled = False

    async def run(self) -> str:
        try:
            await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return "measured"


def test_a_silent_engine_is_hung_within_its_bound(silent: str, tmp_path: Path) -> None:
    work = Work(30)
    t0 = time.monotonic()
    with pytest.raises(EngineHung) as err:
        asyncio.run(unless_hung(work.run(), Handle(silent, tmp_path / "log"), "/health",
                                lambda: 7, SILENCE_S))
    took = time.monotonic() - t0
    assert SILENCE_S <= took < SILENCE_S + 1.0
    assert work.cancelled
    assert str(err.value).startswith(f"engine stopped answering: no token on any request and "
                                     f"no answer from {silent}/health for ")


def test_an_engine_that_streams_while_its_health_check_waits_is_not_hung(
        silent: str, tmp_path: Path) -> None:
    ticks = iter(range(10**6))
    done = asyncio.run(unless_hung(Work(3 * SILENCE_S).run(), Handle(silent, tmp_path / "l"),
                                   "/health", lambda: next(ticks), SILENCE_S))
    assert done == "measured"


class Computing(Handle):
    """An engine in a long prefill: no token yet, its health check waiting behind the work,
    its processes busy."""

    def __init__(self, base_url: str, log_path: Path) -> None:
        super().__init__(base_url, log_path)
        self.used = 0.0

    def cpu_seconds(self) -> float | None:
        self.used += 1.0
        return self.used


def test_an_engine_that_computes_in_silence_is_not_hung(silent: str, tmp_path: Path) -> None:
    done = asyncio.run(unless_hung(Work(4 * SILENCE_S).run(),
                                   Computing(silent, tmp_path / "log"), "/health", lambda: 0,
                                   SILENCE_S))
    assert done == "measured"


def test_an_engine_that_answers_its_health_check_is_not_hung(healthy: str,
                                                              tmp_path: Path) -> None:
    done = asyncio.run(unless_hung(Work(3 * SILENCE_S).run(), Handle(healthy, tmp_path / "l"),
                                   "/health", lambda: 0, SILENCE_S))
    assert done == "measured"


def test_an_engine_that_exited_is_left_to_the_crash_checks(silent: str,
                                                            tmp_path: Path) -> None:
    handle = Handle(silent, tmp_path / "log")
    handle.code = 139
    work = Work(3 * SILENCE_S)
    assert asyncio.run(unless_hung(work.run(), handle, "/health", lambda: 0,
                                   SILENCE_S)) == "measured"
    assert not work.cancelled


def test_the_measurement_s_own_error_passes_through(healthy: str, tmp_path: Path) -> None:
    async def broken() -> str:
        raise RuntimeError("the harness broke")

    with pytest.raises(RuntimeError, match="the harness broke"):
        asyncio.run(unless_hung(broken(), Handle(healthy, tmp_path / "log"), "/health",
                                lambda: 0, SILENCE_S))
