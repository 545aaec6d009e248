"""Wait until an engine is really ready, failing fast.

Ready means: the health endpoint answers 200, the model list names the served
model, and one real completion returns a token. While waiting, the engine is
watched: if it exits, waiting stops at once with its exit code, class and log
tail; if its log already shows an out-of-memory line, waiting stops too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import httpx

from tuner.engines.spec import EngineSpec
from tuner.errors import EngineStartError
from tuner.launch.base import EngineHandle
from tuner.launch.classify import classify_log, first_oom_line

log = logging.getLogger(__name__)


def _ready(http: httpx.Client, handle: EngineHandle, health: str, served: str) -> bool:
    try:
        if http.get(handle.base_url + health).status_code != 200:
            return False
        models = http.get(handle.base_url + "/v1/models")
        if models.status_code != 200 or served not in {m.get("id") for m in
                                                       models.json().get("data", [])}:
            return False
        done = http.post(handle.base_url + "/v1/completions", json={
            "model": served, "prompt": "Hello", "max_tokens": 1, "temperature": 0.0},
            timeout=120.0)
        return done.status_code == 200 and bool(done.json().get("choices"))
    except (httpx.HTTPError, ValueError):
        return False


def wait_ready(handle: EngineHandle, spec: EngineSpec, served: str, *,
               timeout_s: float | None = None,
               on_wait: Callable[[float], None] | None = None) -> float:
    """Block until ready; return the seconds it took. Raises EngineStartError."""
    failures = spec.failures
    health_path = spec.readiness.health_path
    poll_s = spec.readiness.poll_s
    timeout_s = timeout_s or spec.readiness.timeout_s
    start = time.monotonic()
    with httpx.Client(timeout=httpx.Timeout(5.0, connect=2.0)) as http:
        while True:
            elapsed = time.monotonic() - start
            code = handle.exit_code()
            if code is not None:
                text = handle.log_text()
                outcome, evidence = classify_log(text, failures, code)
                raise EngineStartError(f"engine exited with code {code} before it was ready "
                                       f"({outcome}: {evidence})", outcome=outcome,
                                       exit_code=code, log_tail=handle.log_tail())
            oom = first_oom_line(handle.log_text(), failures)
            if oom is not None:
                raise EngineStartError(f"engine ran out of memory while starting: {oom}",
                                       outcome="oom", exit_code=None,
                                       log_tail=handle.log_tail())
            if _ready(http, handle, health_path, served):
                log.debug("engine ready after %.1fs", elapsed)
                return elapsed
            if elapsed > timeout_s:
                raise EngineStartError(f"engine not ready after {timeout_s:.0f}s",
                                       outcome="startup_timeout", exit_code=None,
                                       log_tail=handle.log_tail())
            if on_wait is not None:
                on_wait(elapsed)
            time.sleep(poll_s)
