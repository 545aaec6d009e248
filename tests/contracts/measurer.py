"""The measurer contract (``tuner/study/measurer.py``) as one suite every measurer passes: what
a trial (``tuner/study/trial.py``) and the quality check (``tuner/study/quality_guard.py``)
rely on.

- ``wait_ready`` returns the seconds it waited; an engine that exits before it is ready is an
  EngineStartError with its exit code and the tail of its log (the trial's outcome is its
  ``outcome``);
- ``capacity`` returns its steps (the best among them, or None) with the requests behind them
  and leaves the engine running; an engine that died (under load, or between readiness and the
  search) ends as a crash (``crashed_during_load``): capacity raises EngineCrashed, or returns
  while ``exit_code()`` says the engine ended (the trial looks at it after the search; a death
  in the search's last step comes back that way from the HTTP measurer), never anything else;
  an engine that does not serve the workload (no such model or route) is an EndpointError
  (``probe_failed``);
- ``greedy`` answers the quality check's fixed prompts, all of them, in order, on every call,
  in seconds; an engine that does not answer is an EndpointError (the quality check records no
  reference, or fails the configuration, and the trial goes on).

A test module subclasses :class:`MeasurerContract` and gives a ``measurer_case`` fixture: a
:class:`MeasurerCase` that starts engines of the kinds the contract needs with the measurer
that measures them, and kills them behind the measurer's back.
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from typing import Literal, get_args

import pytest

from tuner.core import EndpointError, EngineCrashed, EngineStartError
from tuner.launch import EngineHandle
from tuner.loadgen import RequestRecord
from tuner.measurement import PROMPTS
from tuner.study import Measurer, Outcome

Engine = Literal["serving", "exits_at_start", "off_workload"]
"""``serving``: starts and serves the measurer's workload; ``exits_at_start``: exits with an
error before it is ready; ``off_workload``: gets ready, but does not serve the workload (no such
model or route)."""

GREEDY_TOKENS = 8
GREEDY_BUDGET_S = 30.0


class MeasurerCase(ABC):
    """One measurer under the contract. ``close`` stops every engine it started."""

    def __init__(self) -> None:
        self.handles: list[EngineHandle] = []

    @abstractmethod
    def start(self, engine: Engine) -> tuple[Measurer, EngineHandle]:
        """A started engine of kind ``engine`` and the measurer that measures it."""

    @abstractmethod
    def kill(self, handle: EngineHandle) -> None:
        """Kill the engine now, behind the measurer's back."""

    @abstractmethod
    def kill_under_load(self, handle: EngineHandle) -> None:
        """Have the engine killed once it is serving the capacity search's load."""

    def close(self) -> None:
        for handle in self.handles:
            handle.stop(grace_s=1.0)


class MeasurerContract:
    """Subclass as ``TestXxx`` in a module that provides a ``measurer_case`` fixture."""

    def ready(self, case: MeasurerCase, engine: Engine = "serving"
              ) -> tuple[Measurer, EngineHandle]:
        measurer, handle = case.start(engine)
        measurer.wait_ready(handle)
        return measurer, handle

    def test_wait_ready_returns_the_seconds_it_waited(
            self, measurer_case: MeasurerCase) -> None:
        measurer, handle = measurer_case.start("serving")
        t0 = time.monotonic()
        waited = measurer.wait_ready(handle)
        assert isinstance(waited, float)
        assert 0.0 <= waited <= time.monotonic() - t0 + 0.5
        assert handle.exit_code() is None

    def test_an_engine_that_exits_at_start_is_an_engine_start_error_with_its_exit_and_log(
            self, measurer_case: MeasurerCase) -> None:
        measurer, handle = measurer_case.start("exits_at_start")
        with pytest.raises(EngineStartError) as failed:
            measurer.wait_ready(handle)
        assert failed.value.outcome in get_args(Outcome)
        assert failed.value.exit_code is not None
        assert failed.value.exit_code == handle.exit_code()
        assert failed.value.log_tail

    def test_capacity_returns_its_steps_and_requests_and_leaves_the_engine_running(
            self, measurer_case: MeasurerCase) -> None:
        measurer, handle = self.ready(measurer_case)
        found, records = measurer.capacity(handle, 1)
        assert found.steps
        assert found.best is None or found.best in found.steps
        if found.best is not None:
            assert found.best.accelerators == 1
        if found.estimate is not None:
            assert found.estimate.load > 0
            cost = found.estimate.cost_per_m_output_tokens
            assert cost is not None
            assert cost > 0
        assert records
        assert all(isinstance(r, RequestRecord) for r in records)
        assert handle.exit_code() is None

    def ends_as_a_crash(self, measurer: Measurer, handle: EngineHandle) -> None:
        """The capacity search on a dying engine: EngineCrashed, or a result while the engine's
        exit shows (what ``run_trial`` makes ``crashed_during_load`` of)."""
        with contextlib.suppress(EngineCrashed):
            measurer.capacity(handle, 1)
        assert handle.exit_code() is not None

    def test_an_engine_that_dies_under_load_ends_as_a_crash(
            self, measurer_case: MeasurerCase) -> None:
        measurer, handle = self.ready(measurer_case)
        measurer_case.kill_under_load(handle)
        self.ends_as_a_crash(measurer, handle)

    def test_an_engine_that_died_after_it_was_ready_ends_as_a_crash(
            self, measurer_case: MeasurerCase) -> None:
        measurer, handle = self.ready(measurer_case)
        measurer_case.kill(handle)
        self.ends_as_a_crash(measurer, handle)

    def test_an_engine_that_does_not_serve_the_workload_is_an_endpoint_error(
            self, measurer_case: MeasurerCase) -> None:
        measurer, handle = self.ready(measurer_case, "off_workload")
        with pytest.raises(EndpointError):
            measurer.capacity(handle, 1)

    def test_greedy_answers_the_fixed_prompts_in_order_on_every_call(
            self, measurer_case: MeasurerCase) -> None:
        measurer, handle = self.ready(measurer_case)
        for _ in range(2):
            t0 = time.monotonic()
            answers = measurer.greedy(handle, GREEDY_TOKENS)
            took = time.monotonic() - t0
            assert [a.prompt for a in answers] == list(PROMPTS)
            assert all(a.text for a in answers)
            assert took < GREEDY_BUDGET_S, f"greedy answers took {took:.1f}s"

    def test_greedy_on_an_engine_that_died_is_an_endpoint_error(
            self, measurer_case: MeasurerCase) -> None:
        measurer, handle = self.ready(measurer_case)
        measurer_case.kill(handle)
        with pytest.raises(EndpointError):
            measurer.greedy(handle, GREEDY_TOKENS)
