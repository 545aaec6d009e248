"""Intensification: a trial that beats the incumbent is measured again before it can lead."""

from __future__ import annotations

from pathlib import Path

from tests.unit.fakes.launcher import FakeHandle, FakeLauncher, FakeMeasurer, records, summary
from tests.unit.search.conftest import SMOKE, MakeContext
from tuner.launch.base import EngineHandle
from tuner.loadgen.records import RequestRecord
from tuner.measurement.capacity import CapacityResult, estimate
from tuner.search.study import StudyProgress, run_search
from tuner.search.study_config import StudyConfig
from tuner.search.tracker import NullTracker


class CostByStart(FakeMeasurer):
    """Each start's cost by its tag; None: the start meets no load within the SLOs."""

    def __init__(self, costs: dict[str, float | None]) -> None:
        super().__init__()
        self.costs = costs
        self.tags: list[str] = []

    def capacity(self, handle: EngineHandle, accelerators: int
                 ) -> tuple[CapacityResult, list[RequestRecord]]:
        assert isinstance(handle, FakeHandle)
        tag = handle.request.labels["tuner.trial"]
        self.tags.append(tag)
        cost = self.costs.get(tag, 2.0)
        if cost is None:
            step = summary(1.0, passed=False)
            return CapacityResult(steps=[step], best=None, lowest_failing_load=1.0,
                                  stopped_by="min_load"), records()
        best = summary(2.0, passed=True, cost=cost)
        found = estimate([best], best, None)
        assert found is not None
        found.cost_per_m_output_tokens = cost
        return CapacityResult(steps=[best], best=best, lowest_failing_load=None,
                              stopped_by="max_steps", estimate=found), records()


def study(tmp_path: Path, make_ctx: MakeContext, costs: dict[str, float | None], trials: int
          ) -> tuple[StudyProgress, CostByStart]:
    measurer = CostByStart(costs)
    ctx = make_ctx(FakeLauncher(), measurer)
    cfg = StudyConfig(engine="vllm", workload=SMOKE, model="/m", trials=trials,
                      intensify=True, out_dir=tmp_path, study_name="intensify")
    state = StudyProgress()
    run_search(cfg, ctx, NullTracker(), state)
    return state, measurer


def test_a_lucky_start_does_not_win(tmp_path: Path, make_ctx: MakeContext) -> None:
    costs: dict[str, float | None] = {"trial-000": 1.0, "trial-000-again": 1.2,
                                      "trial-002": 0.5, "trial-002-again": 3.0}
    state, measurer = study(tmp_path, make_ctx, costs, trials=6)
    launched = [r for r in state.results if not r.rejected_before_launch]
    assert sum(r.starts for r in launched) == 6  # the second starts count toward --trials
    assert "trial-000-again" in measurer.tags  # the defaults are the first incumbent
    assert "trial-002-again" in measurer.tags
    by_number = {r.number: r for r in launched}
    assert by_number[2].costs == [0.5, 3.0]
    assert by_number[2].cost_per_m_output_tokens == 1.75
    assert by_number[0].cost_per_m_output_tokens == 1.1
    assert state.feasible[0].number == 0  # the lucky start did not take the lead
    assert all(r.starts == 1 for r in launched if r.number not in (0, 2))  # dearer: once


def test_a_challenger_that_fails_its_second_start_is_infeasible(
        tmp_path: Path, make_ctx: MakeContext) -> None:
    costs: dict[str, float | None] = {"trial-000": 1.0, "trial-000-again": 1.0,
                                      "trial-002": 0.5, "trial-002-again": None}
    state, _ = study(tmp_path, make_ctx, costs, trials=5)
    second = next(r for r in state.results if r.number == 2)
    assert not second.feasible
    assert second.starts == 2
    assert "met the SLOs on its first start, not on its second" in second.detail
