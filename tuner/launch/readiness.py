"""Wait until an engine is really ready, failing fast.

Ready means: the health endpoint answers 200, the model list names the served model (where
the engine lists it), and one real completion returns a token. While waiting, the engine is
watched: if it exits, waiting stops at once with its exit code, class and log tail; if its log
already shows an out-of-memory line, waiting stops too, and so it does when the engine answers
the first completion with a server error and its log names an invalid configuration
(transformers serve refuses some knob values only at the first request). An engine not ready
within the bound is a ``startup_timeout`` whose line ends with its log's last line (what it
was doing); every request is bounded by what is left of it, so an engine that accepts
connections and answers nothing does not stretch it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial

import httpx

from tuner.core import EngineStartError
from tuner.engines import EngineSpec
from tuner.launch.base import EngineHandle
from tuner.launch.classify import classify_log, first_line, first_oom_line

log = logging.getLogger(__name__)


COMPLETION_TIMEOUT_S = 120.0
"""The most the first completion may take (a cold engine compiles), within the startup bound."""
PROBE_TIMEOUT_S = 5.0


def _ready(http: httpx.Client, handle: EngineHandle, health: str, served: str,
           left_s: float, *, lists_model: bool = True,
           healthy: Callable[[], None] = lambda: None) -> bool | None:
    """Health, model list (where the engine lists what it serves) and one completion answer,
    each within what is left of the startup bound (an engine that accepts connections and
    answers nothing must not stretch it); ``healthy`` is called when health answers 200. None:
    the completion got a server error (5xx)."""
    probe = max(0.5, min(PROBE_TIMEOUT_S, left_s))
    try:
        if http.get(handle.base_url + health, timeout=probe).status_code != 200:
            return False
        healthy()
        if lists_model:
            models = http.get(handle.base_url + "/v1/models", timeout=probe)
            if models.status_code != 200 or served not in {m.get("id") for m in
                                                           models.json().get("data", [])}:
                return False
        done = http.post(handle.base_url + "/v1/completions", json={
            "model": served, "prompt": "Hello", "max_tokens": 1, "temperature": 0.0},
            timeout=max(1.0, min(COMPLETION_TIMEOUT_S, left_s)))
        if done.status_code >= 500:
            return None
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
    first_healthy: list[float] = []  # the start of the poll where health first answered 200
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
            ready = _ready(http, handle, health_path, served, timeout_s - elapsed,
                           lists_model=spec.readiness.lists_model,
                           healthy=partial(first_healthy.append, elapsed))
            if ready:
                log.debug("engine ready after %.1fs", elapsed)
                handle.health_lead_s = round(elapsed - first_healthy[0], 3)
                handle.metric_families = metric_families(http, handle.metrics_url)
                return elapsed
            refused = None if ready is not None else first_line(
                handle.log_text(), failures.invalid_config)
            if refused is not None:  # up, but it cannot serve this configuration
                raise EngineStartError(f"engine answered its first request with a server "
                                       f"error: {refused}", outcome="invalid_config",
                                       exit_code=None, log_tail=handle.log_tail())
            if time.monotonic() - start > timeout_s:
                last = last_line(handle.log_tail(5))
                raise EngineStartError(f"engine not ready after {timeout_s:g}s (startup "
                                       f"timeout); its log ends: {last or '(empty)'}",
                                       outcome="startup_timeout", exit_code=None,
                                       log_tail=handle.log_tail())
            if on_wait is not None:
                on_wait(elapsed)
            time.sleep(poll_s)


def last_line(text: str) -> str:
    """The last line of a log that says something (shortened)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def metric_families(http: httpx.Client, url: str | None) -> int | None:
    """How many Prometheus metric families the endpoint exposes (its ``# TYPE`` lines); None
    when there is no endpoint or it does not answer."""
    if url is None:
        return None
    try:
        resp = http.get(url, timeout=PROBE_TIMEOUT_S)
    except httpx.HTTPError:
        return None
    if resp.status_code != 200:
        return None
    return sum(line.startswith("# TYPE ") for line in resp.text.splitlines())
