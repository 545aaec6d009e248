"""TEST ONLY: the fake engine of tests/unit/fakes for `tune` processes that tests start
(``TUNER_FAKE_ENGINE=tests.integration.fake_engine:make``), so that several tuner processes
can run one shared study through a real PostgreSQL and a real MLflow server in seconds. Each
trial holds its fake engine for ``TUNER_FAKE_TRIAL_S`` seconds (default 1). It proves nothing
about engines; what it lets a test prove is the sharing of a study between processes."""

from __future__ import annotations

import os
import time

from tests.unit.fakes.launcher import FakeLauncher, FakeMeasurer
from tuner.launch.base import EngineHandle
from tuner.loadgen.records import RequestRecord
from tuner.measurement.capacity import CapacityResult


class PacedMeasurer(FakeMeasurer):
    def capacity(self, handle: EngineHandle, accelerators: int
                 ) -> tuple[CapacityResult, list[RequestRecord]]:
        time.sleep(float(os.environ.get("TUNER_FAKE_TRIAL_S", "1")))
        return super().capacity(handle, accelerators)


def make() -> tuple[FakeLauncher, PacedMeasurer]:
    return FakeLauncher(), PacedMeasurer()
