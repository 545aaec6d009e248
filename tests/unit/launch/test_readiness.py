"""An engine that does not get ready within its bound is a startup timeout, within the bound
even when it accepts connections and answers nothing, and its line ends with what its log
said last; the trial then stops it (tests/integration/test_faults.py starts a real slow one)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tuner.core import EngineStartError
from tuner.engines import Rendered, load_engine_spec
from tuner.launch.base import EngineHandle
from tuner.launch.readiness import metric_families, wait_ready


class Loading(EngineHandle):
    """An engine still loading: alive, its socket open, nothing answered."""

    def __init__(self, base_url: str, log_path: Path) -> None:
        self.base_url, self.log_path = base_url, log_path
        self.rendered = Rendered(argv=["engine"])
        log_path.write_text("$ engine --model m\nloading weights: 10%\nloading weights: 20%\n\n")

    def exit_code(self) -> int | None:
        return None

    def stop(self, grace_s: float = 20.0) -> None:
        pass


def test_a_slow_start_times_out_within_its_bound_with_its_last_log_line(
        silent: str, tmp_path: Path) -> None:
    spec = load_engine_spec("vllm")
    handle = Loading(silent, tmp_path / "engine.log")
    t0 = time.monotonic()
    with pytest.raises(EngineStartError) as err:
        wait_ready(handle, spec, "m", timeout_s=1.5)
    assert time.monotonic() - t0 < 1.5 + spec.readiness.poll_s + 1.0
    assert err.value.outcome == "startup_timeout"
    assert str(err.value) == ("engine not ready after 1.5s (startup timeout); its log ends: "
                              "loading weights: 20%")
    assert "loading weights: 10%" in err.value.log_tail


def test_metric_families_are_the_endpoints_type_lines() -> None:
    text = ("# HELP a_total A.\n# TYPE a_total counter\na_total 1\n"
            "# HELP b B.\n# TYPE b gauge\nb 2\n")
    with httpx.Client(transport=httpx.MockTransport(
            lambda r: httpx.Response(200 if r.url.path == "/metrics" else 404, text=text))
            ) as http:
        assert metric_families(http, "http://e/metrics") == 2
        assert metric_families(http, "http://e/nothing") is None
        assert metric_families(http, None) is None
