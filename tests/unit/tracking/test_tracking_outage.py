"""A tracking store that is down holds no study up: trials and the study's end are kept in the
run folder and logged once it answers again (or by ``tune report --dir``), each once, even
after an attempt that broke off half-way. The store here is a real MLflow store (SQLite) whose
reachability is a seam; a real tracking server stopped for 30 s mid-study is
tests/integration/test_outages.py."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

from tuner.core import StudyError
from tuner.study import RunFolder, TrialResult
from tuner.tracking import mlflow_tracker
from tuner.tracking.delivery import reachable
from tuner.tracking.mlflow_tracker import MlflowTracker, deliver_kept
from tuner.tracking.outbox import Outbox, StudyEnd


def trial(n: int, cost: float | None = 1.0) -> TrialResult:
    return TrialResult(number=n, config={"max_batch_size": 8 * (n + 1)}, defaults=n == 0,
                       outcome="ok" if cost else "oom", cost_per_m_output_tokens=cost,
                       max_load=2.0 if cost else None)


class Server:
    """Whether the tracking store answers (the seam the tracker asks first)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.up = True
        monkeypatch.setattr(mlflow_tracker, "reachable", lambda uri: self.up)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One MLflow store (SQLite) for the module: each test its own study in it."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


def tracker_in(tmp_path: Path, uri: str) -> tuple[MlflowTracker, MlflowClient, str]:
    tracker = MlflowTracker(uri, tmp_path / "artifacts",
                            outbox=Outbox(RunFolder(tmp_path / "run").outbox))
    tracker.start_study(tmp_path.name, tags={}, params={})
    return tracker, MlflowClient(tracking_uri=uri), uri


def trial_runs(client: MlflowClient, tracker: MlflowTracker) -> list[str]:
    runs = client.search_runs([tracker.experiment_id], "tags.`tuner.role` = 'trial'")
    return sorted(r.data.tags["tuner.trial"] for r in runs)


@pytest.mark.slow  # a real MLflow store: its first use takes seconds
def test_what_a_down_store_missed_is_logged_once_when_it_answers(
        store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    server = Server(monkeypatch)
    tracker, client, _ = tracker_in(tmp_path, store)
    tracker.log_trial(trial(0))
    server.up = False
    with caplog.at_level("WARNING", logger="tuner"):
        tracker.log_trial(trial(1))
        tracker.log_trial(trial(2, cost=None))
    said = [r.getMessage() for r in caplog.records if r.name.startswith("tuner")]
    assert len(said) == 1  # once per outage, not per trial
    assert "unreachable (it does not answer); 1 record(s) kept in " in said[0]
    assert trial_runs(client, tracker) == ["0"]
    assert [r.number for r in Outbox(RunFolder(tmp_path / "run").outbox).trials()] == [1, 2]

    server.up = True
    caplog.clear()
    with caplog.at_level("WARNING", logger="tuner"):
        tracker.log_trial(trial(3))
    assert trial_runs(client, tracker) == ["0", "1", "2", "3"]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("tuner")] == [
        f"MLflow at {tracker.uri} answers again: 3 kept record(s) logged"]
    assert not (RunFolder(tmp_path / "run").outbox).exists()

    tracker.catch_up([trial(n) for n in range(4)])  # a rerun: all there, nothing twice
    assert trial_runs(client, tracker) == ["0", "1", "2", "3"]


@pytest.mark.slow  # a real MLflow store: its first use takes seconds
def test_the_study_s_end_is_kept_and_logged_once(store: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server(monkeypatch)
    tracker, client, _ = tracker_in(tmp_path, store)
    summary = tmp_path / "run" / "summary.json"
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text("{}\n")
    server.up = False
    tracker.finish_study({"wall_s": 12.5}, [("", summary)], {"best_config.yaml": "x: 1\n"})
    assert client.get_run(tracker.parent_id).info.status == "RUNNING"
    server.up = True
    assert tracker.deliver()
    assert tracker.deliver()  # nothing left: nothing again
    run = client.get_run(tracker.parent_id)
    assert run.info.status == "FINISHED"
    assert [m.value for m in client.get_metric_history(tracker.parent_id, "wall_s")] == [12.5]
    assert sorted(a.path for a in client.list_artifacts(tracker.parent_id)) == [
        "best_config.yaml", "summary.json"]


@pytest.mark.slow  # a real MLflow store: its first use takes seconds
def test_an_attempt_that_broke_off_is_replaced_not_doubled(store: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    Server(monkeypatch)
    tracker, client, _ = tracker_in(tmp_path, store)
    # An earlier attempt created trial 1's run, then the server went away.
    client.create_run(tracker.experiment_id, run_name="trial-001", tags={
        "mlflow.parentRunId": tracker.parent_id, "tuner.role": "trial", "tuner.trial": "1"})
    outbox = Outbox(RunFolder(tmp_path / "run").outbox)
    outbox.keep_trial(trial(1))
    # And the study's end was logged once already, its answer lost.
    end = StudyEnd(metrics={"wall_s": 3.0})
    tracker.client.log_batch(tracker.parent_id, metrics=[
        Metric("wall_s", 3.0, end.timestamp_ms, 0)])
    outbox.keep_end(end)
    assert tracker.deliver()
    runs = client.search_runs([tracker.experiment_id], "tags.`tuner.role` = 'trial'")
    assert [(r.data.tags["tuner.trial"], r.info.status) for r in runs] == [("1", "FINISHED")]
    assert len(client.get_metric_history(tracker.parent_id, "wall_s")) == 1


@pytest.mark.slow  # a real MLflow store: its first use takes seconds
def test_tune_report_logs_what_a_finished_study_kept(store: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server(monkeypatch)
    tracker, client, uri = tracker_in(tmp_path, store)
    server.up = False
    tracker.log_trial(trial(0))
    tracker.finish_study({"wall_s": 1.0}, [], {})
    assert deliver_kept(tmp_path / "run") is not None  # still down: says so, keeps it
    assert (RunFolder(tmp_path / "run").outbox / "trial-000.json").is_file()
    server.up = True
    assert deliver_kept(tmp_path / "run") == (f"MLflow at {uri}: 2 record(s) kept by the "
                                              "study logged now")
    assert trial_runs(client, tracker) == ["0"]
    assert deliver_kept(tmp_path / "run") is None


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_study_does_not_start_on_a_store_that_does_not_answer(tmp_path: Path) -> None:
    uri = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(StudyError) as err:
        MlflowTracker(uri).start_study("s", tags={}, params={})
    assert str(err.value) == (f"MLflow at {uri} does not answer; start it, or give another "
                              "--tracking-uri (or TUNER_TRACKING_URI)")


def test_a_server_is_asked_and_a_local_store_always_answers() -> None:
    assert not reachable(f"http://127.0.0.1:{closed_port()}", timeout_s=1)
    assert reachable("sqlite:///nowhere/mlflow.db")


def test_the_kept_target_never_holds_a_password(tmp_path: Path) -> None:
    Outbox(tmp_path).keep_target("http://tuner:s3cret@mlflow:5000", "1", "abc")
    target = Outbox(tmp_path).target()
    assert target is not None
    assert target.uri == "http://tuner@mlflow:5000"
    assert "s3cret" not in (tmp_path / "target.json").read_text()
