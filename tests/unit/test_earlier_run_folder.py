"""A study written by the tuner before the study package was reorganised (issue 34) still
reports, exports and resumes: tests/data/earlier-study/ is the run folder and SQLite study of a
fake-engine study (2 trials, the best and the defaults re-measured once) that commit 16b360f
wrote (its model the folder ``model`` where it ran), without its MLflow store and plots."""

from __future__ import annotations

import shutil
from pathlib import Path

import optuna
import pytest
from rich.console import Console

from tests.unit.fakes.launcher import FakeLauncher, FakeMeasurer
from tests.unit.fakes.model import fake_model
from tuner.commands.export import export_command
from tuner.commands.report import report_command
from tuner.commands.tune import tune_command
from tuner.core import Settings
from tuner.deploy import Sizing
from tuner.study import RECORD_ATTR, StudyConfig, parse_record
from tuner.study.coordination import ledger

pytestmark = pytest.mark.slow
DATA = Path(__file__).resolve().parents[1] / "data"
EARLIER = DATA / "earlier-study"
LAUNCHERS: list[FakeLauncher] = []


def make(cfg: StudyConfig, settings: Settings) -> tuple[FakeLauncher, FakeMeasurer]:
    LAUNCHERS.append(FakeLauncher())
    return LAUNCHERS[-1], FakeMeasurer()


@pytest.fixture
def earlier(tmp_path: Path) -> Path:
    run_dir = tmp_path / "runs" / "earlier"
    shutil.copytree(EARLIER, run_dir)
    return run_dir


def test_its_stored_record_reads_as_a_study_record(earlier: Path) -> None:
    study = optuna.load_study(study_name="earlier", storage=f"sqlite:///{earlier / 'study.db'}")
    record = parse_record(study.user_attrs)
    assert record is not None
    assert (record.engine, record.trials, record.seed) == ("vllm", 2, 3)
    assert RECORD_ATTR in study.user_attrs
    assert ledger(study).launched == 2


def test_it_reports_and_exports(earlier: Path, tmp_path: Path) -> None:
    out = Console(record=True, width=200)
    report_command(earlier, out)
    assert "cheapest: trial" in out.export_text()
    text = export_command(earlier, "docker", pick=None, image=None, name=None, port=8000,
                          sizing=Sizing(), settings=Settings(cache_dir=tmp_path / "cache"))
    assert "docker run -d" in text


def test_it_resumes_with_one_more_trial(earlier: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the study's model is ./model, as where it was made
    model = fake_model(Path("model"))
    # Resuming takes the workload the study was made with (workload-ci.yaml as it was then).
    stored = optuna.load_study(study_name="earlier", storage=f"sqlite:///{earlier / 'study.db'}")
    workload = tmp_path / "workload-ci.yaml"
    workload.write_text(parse_record(stored.user_attrs).workload_yaml)
    cfg = StudyConfig(engine="vllm", workload=workload, model=str(model),
                      search_space=DATA / "space-ci.yaml", trials=3, remeasure_top=0,
                      study_name="earlier", seed=3, out_dir=earlier.parent, heartbeat_s=1)
    quiet = Console(file=(tmp_path / "progress.txt").open("w"))
    out = Console(record=True, width=200)
    summary = tune_command(cfg, Settings(pin_cores=False, cache_dir=tmp_path / "cache"), out,
                           quiet, make)
    started = [h.request.log_path.stem for h in LAUNCHERS[-1].started]
    assert len(started) == 1  # the earlier two trials are kept, one more is launched
    assert started[0] not in ("trial-000", "trial-001")
    assert sum(n for outcome, n in summary.trials.items()
               if outcome != "rejected_before_launch") == 3
    assert summary.defaults_trial is not None
    assert summary.defaults_trial.number == 0
