"""``--budget-usd``: no new trial starts once the study's finished trials spent it; the
progress line shows the spend and what finishing takes; the budget is the study's (stored)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.unit.fakes.launcher import FakeLauncher
from tests.unit.study.conftest import SMOKE, MakeContext
from tuner.loadgen import NullProgress
from tuner.study.config import StudyConfig
from tuner.study.coordination.joining import open_shared
from tuner.study.coordination.spend import study_spend
from tuner.study.loop import run_search
from tuner.study.state import StudyProgress
from tuner.study.tracker import NullTracker
from tuner.workload import Cost, Workload, load_workload


class Recorded(NullProgress):
    def __init__(self) -> None:
        self.notes: list[str] = []
        self.statuses: dict[str, list[str]] = {}

    def note(self, text: str) -> None:
        self.notes.append(text)

    def status(self, key: str, value: str) -> None:
        self.statuses.setdefault(key, []).append(value)


def priced(usd_per_hour: float) -> Workload:
    """The smoke workload at a price that makes the fake engine's milliseconds dear."""
    return load_workload(SMOKE).model_copy(update={"cost": Cost(usd_per_hour=usd_per_hour)})


def config(tmp_path: Path, **over: object) -> StudyConfig:
    data: dict[str, object] = {"engine": "vllm", "workload": SMOKE, "model": "/m", "trials": 6,
                               "out_dir": tmp_path, "study_name": "budget", **over}
    return StudyConfig.model_validate(data)


def test_the_study_stops_once_its_trials_spent_the_budget(tmp_path: Path,
                                                          make_ctx: MakeContext) -> None:
    progress = Recorded()
    launcher = FakeLauncher()
    # An hour of the fake engine costs $1e9: any trial of it costs more than $1.
    ctx = replace(make_ctx(launcher), workload=priced(1e9), progress=progress)
    state = StudyProgress()
    study = run_search(config(tmp_path, budget_usd=1.0), ctx, NullTracker(), state)
    launched = [r for r in state.results if not r.rejected_before_launch]
    assert len(launched) == 1  # the defaults trial spent it; no other trial started
    assert len(launcher.started) == 1
    assert study_spend(study, ctx.workload.cost).usd > 1.0
    assert any(n.startswith("money budget spent ($") and n.endswith("of $1); no new trials")
               for n in progress.notes)
    line = progress.statuses["spend"][-1]
    assert " of $1 spent; to finish: 0 engine starts" in line


def test_without_a_budget_the_line_estimates_the_rest(tmp_path: Path,
                                                      make_ctx: MakeContext) -> None:
    progress = Recorded()
    ctx = replace(make_ctx(), workload=priced(3600.0), progress=progress)
    run_search(config(tmp_path, trials=3), ctx, NullTracker(), StudyProgress())
    lines = progress.statuses["spend"]
    assert "spent; to finish: 2 engine starts, about 0 s, $" in lines[0]
    assert "spent; to finish: 0 engine starts" in lines[-1]


def test_the_budget_is_the_studys_and_a_rerun_sets_it(tmp_path: Path,
                                                      make_ctx: MakeContext) -> None:
    ctx = make_ctx()
    defaults = ctx.space.legal_defaults(ctx.defaults_config())
    first = open_shared(config(tmp_path, budget_usd=5.0), defaults)
    assert first.record.budget_usd == 5.0
    again = open_shared(config(tmp_path, budget_usd=8.0), defaults)
    assert not again.created
    assert again.record.budget_usd == 8.0
