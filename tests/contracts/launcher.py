"""The launcher contract (``tuner/launch/base.py``) as one suite every launcher passes.

A test module subclasses :class:`LauncherContract` and gives a ``launcher_case`` fixture: a
:class:`LauncherCase` that holds the launcher and knows how to kill an engine behind its back.
The engine is the small Python program :data:`ENGINE`, run through the launcher from the spec
:func:`engine_spec` builds (as a process, or in a container with the entrypoint overridden).
A knob ``mode`` picks what it does:

- ``serve``: print, start a worker in its process group, listen on its port until stopped,
  say goodbye on SIGTERM;
- ``detach``: the same, with the worker in a session of its own (outside the group);
- ``stubborn``: the same as ``serve``, but ignore SIGTERM;
- ``exit``: print a bad-option line and exit with code 3 at once.

It always prints whether the secret variable reached it (a digest, never the value).
This tests launchers, not engines: the fake launcher's case acts the program out itself.
Runs: test_launcher_fake_process.py (the fake and the process launcher, unit speed) and
test_launcher_docker.py (the Docker launcher against a real daemon, integration).
"""

from __future__ import annotations

import hashlib
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import SecretStr

from tuner.core import EngineStartError
from tuner.engines import EngineSpec
from tuner.launch import EngineHandle, Launcher, LaunchRequest, wait_ready

SERVED = "contract"
SECRET_VAR = "CONTRACT_SECRET"
SECRET = SecretStr("contract-s3cret-do-not-log-7731")
EXIT_CODE = 3

UP = "engine: up"
SERVING = "engine: serving"
BAD_OPTION = "engine: bad option --frobnicate"
GOODBYE = "engine: got SIGTERM"

START_BUDGET_S = 10.0   # start() returns long before this engine could ever be ready
WAIT_S = 20.0           # for the engine to print, or to die once killed
GRACE_S = 1.0           # stop()'s grace: this engine needs no more, a stubborn one gets no more

ENGINE = f"""
import hashlib, http.server, os, signal, subprocess, sys
host, port, var, _, mode = sys.argv[1:6]
def say(*words):
    print("engine:", *words, flush=True)
say("up")
value = os.environ.get(var)
print(var, "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16] if value else "unset",
      flush=True)
if mode == "exit":
    say("bad option", "--frobnicate")
    sys.exit({EXIT_CODE})
def goodbye(signum, frame):
    say("got", "SIGTERM")
    if mode != "stubborn":
        sys.exit(0)
signal.signal(signal.SIGTERM, goodbye)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                 start_new_session=mode == "detach")
say("serving")
http.server.HTTPServer((host, int(port)), http.server.BaseHTTPRequestHandler).serve_forever()
"""
"""The contract's engine. Its argv: host, port, the secret's name, ``--mode``, the mode. It
never spells out what it prints: its code is in the log's first line (the command line)."""


def secret_line(var: str, value: str | None) -> str:
    """What :data:`ENGINE` prints about the secret variable."""
    if value is None:
        return f"{var} unset"
    return f"{var} sha256:{hashlib.sha256(value.encode()).hexdigest()[:16]}"


def engine_spec() -> EngineSpec:
    """A spec that runs :data:`ENGINE` as a process and in the test image."""
    spelled = [line for line in (UP, SERVING, BAD_OPTION, GOODBYE) if line in ENGINE]
    assert not spelled, f"the engine's code spells {spelled}: the log's command line shows it"
    code = ENGINE.replace("{", "{{").replace("}", "}}")  # argv parts are format templates
    args = ["{host}", "{port}", SECRET_VAR]
    return EngineSpec.model_validate({
        "name": "contract",
        "display_name": "contract engine",
        "process": {"argv": ["{python}", "-c", code, *args]},
        "container": {"image": "tuner-test/vllm-cpu", "tag": "local",
                      "entrypoint": ["python3", "-c", ENGINE], "argv": args},
        "readiness": {"poll_s": 0.1},
        "knobs": {"mode": {"flag": "--mode", "always": True, "default": "serve"}},
    })


class LauncherCase(ABC):
    """One launcher under the contract. ``start`` remembers every handle so that ``close``
    stops whatever a failing test left running."""

    launcher: Launcher

    def __init__(self) -> None:
        self.handles: list[EngineHandle] = []

    def start(self, request: LaunchRequest) -> EngineHandle:
        handle = self.launcher.start(request)
        self.handles.append(handle)
        return handle

    @abstractmethod
    def kill(self, handle: EngineHandle) -> None:
        """Kill the running engine behind the launcher's back (SIGKILL, ``docker kill``)."""

    def close(self) -> None:
        for handle in self.handles:
            handle.stop(grace_s=GRACE_S)
        self.launcher.cleanup_own()


def wait_for(check: Callable[[], object], what: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(0.05)


def assert_nothing_left(case: LauncherCase) -> None:
    left = case.launcher.cleanup_own()
    assert left == [], f"stop() left {left} behind"


class LauncherContract:
    """Subclass as ``TestXxx`` in a module that provides a ``launcher_case`` fixture."""

    @pytest.fixture
    def request_for(self, tmp_path: Path) -> Callable[..., LaunchRequest]:
        spec = engine_spec()

        def make(mode: str = "serve", **secret_env: SecretStr) -> LaunchRequest:
            return LaunchRequest(spec=spec, config={"mode": mode}, model="contract-model",
                                 served_name=SERVED, log_path=tmp_path / f"{mode}.log",
                                 secret_env=dict(secret_env))
        return make

    def started_serving(self, case: LauncherCase, request: LaunchRequest) -> EngineHandle:
        handle = case.start(request)
        wait_for(lambda: SERVING in handle.log_tail(), f"the engine to print {SERVING!r}")
        return handle

    def test_start_returns_at_once_and_exit_code_is_none_while_it_runs(
            self, launcher_case: LauncherCase, request_for: Callable[..., LaunchRequest]
    ) -> None:
        t0 = time.monotonic()
        handle = launcher_case.start(request_for())
        took = time.monotonic() - t0
        assert took < START_BUDGET_S, f"start() took {took:.1f}s: it must not wait for readiness"
        assert handle.exit_code() is None
        wait_for(lambda: SERVING in handle.log_tail(), f"the engine to print {SERVING!r}")
        assert handle.exit_code() is None, "the engine serves until it is stopped"

    def test_stop_is_idempotent_and_leaves_nothing_behind(
            self, launcher_case: LauncherCase, request_for: Callable[..., LaunchRequest]
    ) -> None:
        handle = self.started_serving(launcher_case, request_for())
        handle.stop(grace_s=GRACE_S)
        assert handle.exit_code() is not None
        t0 = time.monotonic()
        handle.stop(grace_s=GRACE_S)
        assert time.monotonic() - t0 < 10.0, "a second stop() has nothing left to wait for"
        assert handle.exit_code() is not None
        assert_nothing_left(launcher_case)

    def test_stop_also_ends_a_worker_that_left_the_process_group(
            self, launcher_case: LauncherCase, request_for: Callable[..., LaunchRequest]
    ) -> None:
        handle = self.started_serving(launcher_case, request_for("detach"))
        handle.stop(grace_s=GRACE_S)
        assert handle.exit_code() is not None
        assert_nothing_left(launcher_case)

    def test_stop_kills_an_engine_that_ignores_sigterm_after_the_grace(
            self, launcher_case: LauncherCase, request_for: Callable[..., LaunchRequest]
    ) -> None:
        handle = self.started_serving(launcher_case, request_for("stubborn"))
        t0 = time.monotonic()
        handle.stop(grace_s=GRACE_S)
        took = time.monotonic() - t0
        assert took < GRACE_S + 10.0, f"stop() took {took:.1f}s with a {GRACE_S:.0f}s grace"
        assert handle.exit_code() is not None
        assert GOODBYE in handle.log_text(), "stop() sends SIGTERM before it kills"
        assert_nothing_left(launcher_case)

    def test_log_works_before_while_and_after_the_run(
            self, launcher_case: LauncherCase, request_for: Callable[..., LaunchRequest]
    ) -> None:
        handle = launcher_case.start(request_for())
        assert isinstance(handle.log_tail(), str)
        assert isinstance(handle.log_text(), str)
        wait_for(lambda: SERVING in handle.log_tail(), f"the engine to print {SERVING!r}")
        assert UP in handle.log_text()
        assert handle.exit_code() is None
        handle.stop(grace_s=GRACE_S)
        text = handle.log_text()
        for line in (UP, SERVING, GOODBYE):
            assert line in text
        assert handle.log_tail(lines=1) == text.splitlines()[-1]
        assert GOODBYE in handle.log_tail()
        assert handle.log_path.read_text(encoding="utf-8") == text

    def test_an_engine_that_exits_at_start_fails_readiness_fast_with_its_log(
            self, launcher_case: LauncherCase, request_for: Callable[..., LaunchRequest]
    ) -> None:
        request = request_for("exit")
        handle = launcher_case.start(request)
        t0 = time.monotonic()
        with pytest.raises(EngineStartError) as failed:
            wait_ready(handle, request.spec, SERVED, timeout_s=60.0)
        took = time.monotonic() - t0
        assert took < 15.0, f"readiness took {took:.1f}s to notice a dead engine"
        assert failed.value.exit_code == EXIT_CODE
        assert handle.exit_code() == EXIT_CODE
        assert BAD_OPTION in failed.value.log_tail
        handle.stop(grace_s=GRACE_S)
        handle.stop(grace_s=GRACE_S)
        assert_nothing_left(launcher_case)

    @pytest.mark.parametrize("mode", ["serve", "detach"])
    def test_an_engine_killed_while_running_shows_its_exit_and_keeps_its_log(
            self, launcher_case: LauncherCase, request_for: Callable[..., LaunchRequest],
            mode: str) -> None:
        handle = self.started_serving(launcher_case, request_for(mode))
        launcher_case.kill(handle)
        wait_for(lambda: handle.exit_code() is not None, "exit_code() to see the engine die")
        code = handle.exit_code()
        assert code not in (None, 0)
        assert SERVING in handle.log_tail()
        handle.stop(grace_s=GRACE_S)
        after = handle.exit_code()
        assert after == code, f"the engine ended with {code}; after stop() exit_code() says {after}"
        assert SERVING in handle.log_tail()
        assert_nothing_left(launcher_case)

    def test_a_secret_reaches_the_engine_and_nothing_that_is_recorded(
            self, launcher_case: LauncherCase, request_for: Callable[..., LaunchRequest]
    ) -> None:
        value = SECRET.get_secret_value()
        handle = self.started_serving(launcher_case, request_for(**{SECRET_VAR: SECRET}))
        described = json.dumps(handle.describe(), default=str)
        handle.stop(grace_s=GRACE_S)
        text = handle.log_text()
        assert secret_line(SECRET_VAR, value) in text, "the engine did not get the secret"
        assert value not in described
        assert value not in text.splitlines()[0], "the secret is in the logged command line"
        assert value not in text
        assert value not in handle.rendered.command_line()
