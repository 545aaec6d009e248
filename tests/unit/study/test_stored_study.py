"""A shared study read from its storage alone (``tune report`` / ``tune export`` with
``--storage URL --study NAME``), on a real Optuna SQLite storage made up here the way workers
fill it: the study's record, finished trials with their stored results, one trial whose worker
died (failed, and retried under a new number). The PostgreSQL and MLflow-server run of the same
is tests/integration/test_shared_results.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from rich.console import Console

from tests.unit.fakes.trials import trial
from tuner.commands.export import export_command
from tuner.commands.report import shared_report_command
from tuner.commands.shared_results import shared_study
from tuner.core import ConfigError, Settings
from tuner.deploy import Sizing
from tuner.study import RECORD_ATTR, StudyConfig, record_of
from tuner.study.coordination import RESULT, WORKER, result_attr
from tuner.study.results import read_stored_study

REPO = Path(__file__).resolve().parents[3]
NAME = "vllm-shared"


def make_shared(url: str, tmp_path: Path) -> None:
    cfg = StudyConfig(engine="vllm", workload=REPO / "tests/data/workload-ci.yaml",
                      model="/models/tiny-llama", out_dir=tmp_path, device="cpu")
    study = optuna.create_study(study_name=NAME, storage=url)
    study.set_user_attr(RECORD_ATTR, record_of(cfg, None, now=0.0).model_dump(mode="json"))
    done = [trial(0, 2.0, ttft=300, defaults=True, config={"max_batch_size": 256}),
            trial(1, 1.2, ttft=500, config={"max_batch_size": 64}),
            trial(3, 1.6, ttft=250, config={"max_batch_size": 32})]
    for t in done[:2]:
        study.add_trial(optuna.create_trial(value=t.cost_per_m_output_tokens, user_attrs={
            RESULT: result_attr(t), "outcome": t.outcome, WORKER: "host-a:11"}))
    # Trial 2: its worker was killed; the heartbeat failed it and queued trial 3 in its place.
    study.add_trial(optuna.create_trial(state=TrialState.FAIL, user_attrs={WORKER: "host-b:22"}))
    study.add_trial(optuna.create_trial(
        value=1.6, user_attrs={RESULT: result_attr(done[2]), "outcome": "ok",
                               WORKER: "host-a:11"},
        system_attrs={"failed_trial": 2, "retry_history": [2]}))


@pytest.fixture
def url(tmp_path: Path) -> str:
    found = f"sqlite:///{tmp_path / 'shared.db'}"
    make_shared(found, tmp_path)
    return found


def test_every_trial_is_read_once_and_the_killed_one_is_marked(url: str) -> None:
    stored = read_stored_study(NAME, url)
    assert [(t.number, t.outcome) for t in stored.trials] == [
        (0, "ok"), (1, "ok"), (2, "interrupted"), (3, "ok")]
    assert stored.lost == [2]
    assert stored.trials[2].detail == ("host-b:22 stopped before it finished (no heartbeat); "
                                       "retried as trial 3")
    assert stored.served_name == "tiny-llama"  # the workload's model


def test_report_from_the_storage_alone_writes_the_trials_and_the_front(
        url: str, tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    shared_report_command(NAME, url, None, tmp_path / "elsewhere", console)
    text = console.export_text()
    assert "no tracking server given" in text
    assert "trials whose worker died: 2 (shown as interrupted)" in text
    assert "cheapest: trial 1" in text
    assert f"tune export --storage {url} --study {NAME}" in text
    rows = (tmp_path / "elsewhere" / NAME / "trials.csv").read_text().splitlines()
    assert [r.split(",")[:3] for r in rows[1:]] == [
        ["0", "True", "ok"], ["1", "False", "ok"], ["2", "False", "interrupted"],
        ["3", "False", "ok"]]
    assert (tmp_path / "elsewhere" / NAME / "plots" / "pareto.png").is_file()


def test_export_from_the_storage_alone(url: str, tmp_path: Path) -> None:
    folder = shared_study(NAME, url, None, tmp_path, Console(file=None, quiet=True))
    text = export_command(folder, "command", pick="cheapest", image=None, name=None,
                          port=8000, sizing=Sizing(), settings=Settings())
    assert "--max-num-seqs 64" in text
    assert "trial 1" in text


def test_a_missing_study_lists_the_tuner_studies_there(url: str) -> None:
    optuna.create_study(study_name="not-ours", storage=url)
    with pytest.raises(ConfigError, match=rf"--study nope: no such study in .*; the tuner "
                                          rf"studies there: {NAME}$"):
        read_stored_study("nope", url)
    with pytest.raises(ConfigError, match=r"--study not-ours: not a tuner study"):
        read_stored_study("not-ours", url)


def test_a_database_that_is_not_a_study_is_named_and_left_untouched(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("create table invoices (id integer)")
    with pytest.raises(ConfigError, match="not a tuner study database"):
        read_stored_study(NAME, f"sqlite:///{other}")
    with sqlite3.connect(other) as db:
        tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
    assert tables == ["invoices"]  # nothing created in it


@pytest.mark.parametrize(("url", "needle"), [
    ("postgresql://tuner@127.0.0.1:1/tuner", "cannot reach it"),
    ("sqlite:////nonexistent/study.db", "no such file"),
    ("nosuchdb://x/y", "not a database URL this tuner can open"),
])
def test_an_unusable_url_is_one_line(url: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle) as caught:
        read_stored_study(NAME, url)
    assert "\n" not in str(caught.value)
