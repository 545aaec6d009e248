"""``tune``, ``tune worker`` and ``tune status`` in process on one SQLite study, with the fake
engine at the launcher and measurer seams: ``tune`` re-measures through the study's units and
ends with its summary as before; a worker that joins the finished study starts nothing and
prints the same summary without recording it in MLflow again; ``tune status`` shows the
re-measurement's outcome from the storage alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from rich.console import Console

from tests.unit.fakes.launcher import FakeLauncher, FakeMeasurer
from tests.unit.fakes.model import fake_model
from tuner.commands.export import export_command
from tuner.commands.status import status_command
from tuner.commands.tune import tune_command
from tuner.commands.worker import worker_command
from tuner.core import Settings
from tuner.deploy import Sizing
from tuner.study import StudyConfig

pytestmark = pytest.mark.slow
DATA = Path(__file__).resolve().parents[2] / "data"
LAUNCHERS: list[FakeLauncher] = []


def make(cfg: StudyConfig, settings: Settings) -> tuple[FakeLauncher, FakeMeasurer]:
    """The fake engine (the commands' engine factory), each launcher kept for the test to
    count."""
    LAUNCHERS.append(FakeLauncher())
    return LAUNCHERS[-1], FakeMeasurer()


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    folder = fake_model(tmp_path / "model")
    return folder


def test_tune_then_a_worker_and_status_from_elsewhere(tmp_path: Path, model_dir: Path) -> None:
    settings = Settings(pin_cores=False, cache_dir=tmp_path / "cache")
    quiet = Console(file=(tmp_path / "progress.txt").open("w"))
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    tracking = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cfg = StudyConfig(engine="vllm", workload=DATA / "workload-ci.yaml", model=str(model_dir),
                      search_space=DATA / "space-ci.yaml", trials=3, remeasure_top=1,
                      remeasure_repeats=2, study_name="s", storage=storage,
                      tracking_uri=tracking, out_dir=tmp_path / "host-a", heartbeat_s=1)
    out = Console(record=True, width=200)
    summary = tune_command(cfg, settings, out, quiet, make)
    assert summary.remeasure is not None
    assert [(r.trial, r.repeat) for r in summary.remeasure.runs] == [
        (c.trial, rep) for rep in range(2) for c in summary.remeasure.candidates]
    assert summary.remeasure.candidates[0].defaults
    assert len([h for h in LAUNCHERS[-1].started
                if h.request.log_path.stem.startswith("remeasure")]) == 4
    assert "defaults vs best" in out.export_text()
    # issue 16: the study keeps its trade-offs, and its folder exports the winner
    assert summary.pareto
    assert summary.spend_usd is not None
    assert (cfg.run_dir / "plots" / "pareto.png").is_file()
    assert "docker run -d" in export_command(cfg.run_dir, "docker", pick=None, image=None,
                                             name=None, port=8000, sizing=Sizing(),
                                             settings=settings)

    joined = Console(record=True, width=200)
    worker_command("s", storage, out=tmp_path / "host-b", launcher="process", parallel=1,
                   tracking_uri=None, host={}, settings=settings, console=joined,
                   progress_console=quiet, engine_factory=make)
    assert LAUNCHERS[-1].started == []  # the study's search and re-measurement are done
    text = joined.export_text()
    assert "ran 0 trial(s) of study s" in text
    assert summary.verdict.split(" (")[0] in text  # the same summary, from the storage
    client = MlflowClient(tracking_uri=tracking)
    exp = client.get_experiment_by_name("s")
    assert exp is not None
    parents = client.search_runs([exp.experiment_id], "tags.`tuner.role` = 'study'")
    assert len(parents) == 1
    assert len(client.get_metric_history(parents[0].info.run_id, "wall_s")) == 1  # once

    status = Console(record=True, width=200)
    status_command("s", storage, status)
    lines = status.export_text().splitlines()
    assert "re-measurement: 4 of 4 fresh starts done, 0 running, 0 queued" in lines
    assert any(line.startswith("re-measured best: trial") for line in lines)
