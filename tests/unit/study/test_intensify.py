"""Intensification: a trial that beats the incumbent is measured again before it can lead."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from tests.unit.fakes.launcher import FakeHandle, FakeLauncher, FakeMeasurer, records, summary
from tests.unit.study.conftest import SMOKE, MakeContext
from tuner.launch import EngineHandle
from tuner.loadgen import RequestRecord
from tuner.measurement import CapacityResult, estimate
from tuner.study import loop as study_module
from tuner.study.config import StudyConfig
from tuner.study.coordination.joining import open_shared
from tuner.study.coordination.ledger import Ledger, starts_of
from tuner.study.loop import run_search
from tuner.study.outcome import TrialResult
from tuner.study.state import StudyProgress
from tuner.study.tracker import NullTracker


class CostByStart(FakeMeasurer):
    """Each start's cost by the order of first starts (the defaults are start 0): ``first[i]``
    for the i-th configuration's first start, ``again[i]`` for its second; None: it meets no
    load within the SLOs. Starts not listed cost 2.0."""

    def __init__(self, first: list[float | None], again: dict[int, float | None]) -> None:
        super().__init__()
        self.first, self.again = first, again
        self.tags: list[str] = []
        self.order: dict[str, int] = {}

    def capacity(self, handle: EngineHandle, accelerators: int
                 ) -> tuple[CapacityResult, list[RequestRecord]]:
        assert isinstance(handle, FakeHandle)
        tag = handle.request.labels["tuner.trial"]
        self.tags.append(tag)
        base = tag.removesuffix("-again")
        i = self.order.setdefault(base, len(self.order))
        table = self.again if tag.endswith("-again") else dict(enumerate(self.first))
        cost = table.get(i, 2.0)
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


def study(tmp_path: Path, make_ctx: MakeContext, first: list[float | None],
          again: dict[int, float | None], trials: int) -> tuple[StudyProgress, CostByStart]:
    measurer = CostByStart(first, again)
    ctx = make_ctx(FakeLauncher(), measurer)
    cfg = StudyConfig(engine="vllm", workload=SMOKE, model="/m", trials=trials,
                      intensify=True, out_dir=tmp_path, study_name="intensify")
    state = StudyProgress()
    run_search(cfg, ctx, NullTracker(), state)
    return state, measurer


def test_a_lucky_start_does_not_win(tmp_path: Path, make_ctx: MakeContext) -> None:
    # the defaults cost 1.0 then 1.2; the next configuration looks cheaper (0.5), then 3.0
    state, measurer = study(tmp_path, make_ctx, [1.0, 0.5], {0: 1.2, 1: 3.0}, trials=6)
    launched = [r for r in state.results if not r.rejected_before_launch]
    assert sum(r.starts for r in launched) == 6  # the second starts count toward --trials
    assert measurer.tags[:2] == ["trial-000", "trial-000-again"]  # the first incumbent
    lucky = next(r for r in launched if not r.defaults)
    assert measurer.tags[3] == f"trial-{lucky.number:03d}-again"
    assert lucky.costs == [0.5, 3.0]
    assert lucky.cost_per_m_output_tokens == 1.75
    assert next(r for r in launched if r.defaults).cost_per_m_output_tokens == 1.1
    assert state.feasible[0].defaults  # the lucky start did not take the lead
    assert all(r.starts == 1 for r in launched[2:])  # dearer than the incumbent: once


def test_a_challenger_that_fails_its_second_start_is_infeasible(
        tmp_path: Path, make_ctx: MakeContext) -> None:
    state, _ = study(tmp_path, make_ctx, [1.0, 0.5], {0: 1.0, 1: None}, trials=5)
    second = [r for r in state.results if not r.rejected_before_launch][1]
    assert not second.feasible
    assert second.starts == 2
    assert "met the SLOs on its first start, not on its second" in second.detail


def test_a_second_start_is_not_reserved_past_the_budget_another_process_took(
        tmp_path: Path, make_ctx: MakeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = make_ctx()
    cfg = StudyConfig(engine="vllm", workload=SMOKE, model="/m", trials=2, intensify=True,
                      out_dir=tmp_path, study_name="race")
    shared = open_shared(cfg, ctx.space.legal_defaults(ctx.defaults_config()))
    search = study_module._Search(cfg, ctx, NullTracker(), StudyProgress(), shared.study,
                                  shared.record)
    ours = shared.study.ask()  # the defaults: the first incumbent, a challenger
    real = study_module.ledger
    others: list[optuna.Trial] = []

    def racing(study: optuna.Study) -> Ledger:
        seen = real(study)
        if not others:  # another process asks between this look and the reservation
            others.append(study.ask())
        return seen

    monkeypatch.setattr(study_module, "ledger", racing)
    result = TrialResult(number=ours.number, config={}, defaults=True, outcome="ok",
                         cost_per_m_output_tokens=1.0)
    assert not search._challenges(ours, result)
    assert starts_of(shared.study.get_trials()[ours.number]) == 1  # reservation undone
    assert others  # the other process's start stands: 2 starts in all, the budget
