"""One study, several tuner processes (as if on several hosts: each its own working folder),
through a real PostgreSQL server and a real MLflow tracking server backed by it.

The engines are the unit tests' fake (tests/integration/fake_tune.py, fake_engine.py):
what is proven here is the sharing of the study, not any engine. The study's budget is
global, the defaults and each enqueued configuration run once, no trial runs twice, every
trial is a nested run of the study's one MLflow parent; a worker killed mid-trial loses
nothing: its trial is failed by its heartbeat and run again by another worker, and ``tune
report --storage`` on a machine that ran nothing shows every trial once, the killed one marked. The
re-measurement is shared too: its fresh starts are units that both workers take, each once, a
killed worker's unit is run again by another, both end with the same summary, the MLflow
parent gets it once, and ``tune status`` shows it from an empty folder. The last test runs two
workers of a real llama.cpp study, then reads it from a third folder: ``tune status``, and
``tune report`` and ``tune export`` from PostgreSQL and the MLflow server alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient
from optuna.trial import FrozenTrial, TrialState

from tests.integration.conftest import Postgres
from tests.integration.fake_tune import with_fakes
from tests.unit.fakes.model import fake_model
from tuner.study import RECORD_ATTR
from tuner.study.coordination import WORKER, driver_url, rejected
from tuner.study.repeats import LOST, UNIT

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"


def env(trial_s: float) -> dict[str, str]:
    return {**os.environ, "TUNER_FAKE_TRIAL_S": str(trial_s), "TUNER_PIN_CORES": "0",
            "PYTHONPATH": str(REPO)}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder the fake engine 'serves': only its config is read."""
    return fake_model(tmp_path_factory.mktemp("model"))


def creator(name: str, storage: str, tracking: str, model: Path, out: Path,
            trials: int, remeasure: tuple[int, int] = (0, 1)) -> list[str]:
    """``tune`` creating the study; ``remeasure``: its top configurations to re-measure and
    the fresh starts of each."""
    return [sys.executable, "-m", "tuner", "--engine", "vllm",
            "--workload", str(DATA / "workload-ci.yaml"),
            "--search-space", str(DATA / "space-ci.yaml"), "--enqueue",
            str(DATA / "enqueue-ci.yaml"), "--model", str(model), "--trials", str(trials),
            "--remeasure-top", str(remeasure[0]), "--repeats", str(remeasure[1]),
            "--storage", storage, "--tracking-uri", tracking,
            "--study-name", name, "--heartbeat", "1", "--out", str(out)]


def worker(name: str, storage: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "tuner", "worker", "--study", name, "--storage", storage,
            "--out", str(out)]


def start(cmd: list[str], folder: Path, trial_s: float) -> subprocess.Popen[str]:
    folder.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(with_fakes(cmd), cwd=folder, env=env(trial_s), text=True,
                            stdout=(folder / "out.txt").open("w"),
                            stderr=(folder / "err.txt").open("w"))


def finish(proc: subprocess.Popen[str], folder: Path, timeout: float = 300) -> None:
    code = proc.wait(timeout=timeout)
    assert code == 0, (folder / "err.txt").read_text()[-3000:]


def wait_ready(name: str, storage: str, timeout: float = 120) -> optuna.Study:
    """The study once its creator has published it (workers join only existing studies)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            study = optuna.load_study(study_name=name, storage=driver_url(storage))
            if study.user_attrs.get("tuner.ready"):
                return study
        except KeyError:
            pass
        time.sleep(0.5)
    pytest.fail(f"study {name} was not created within {timeout}s")


def launched(study: optuna.Study) -> list[FrozenTrial]:
    return [t for t in study.get_trials(states=(TrialState.COMPLETE,)) if not rejected(t)]


def test_three_workers_share_one_study(postgres: Postgres, mlflow_server: str,
                                       model_dir: Path, tmp_path: Path) -> None:
    storage = postgres.create_database("optuna_share")
    trials = 6
    first = start(creator("share", storage, mlflow_server, model_dir, tmp_path / "host-a",
                          trials), tmp_path / "host-a", 3)
    study = wait_ready("share", storage)
    others = [start(worker("share", storage, tmp_path / f"host-{h}"), tmp_path / f"host-{h}",
                    3) for h in "bc"]
    finish(first, tmp_path / "host-a")
    for proc, h in zip(others, "bc", strict=True):
        finish(proc, tmp_path / f"host-{h}")

    done = launched(study)
    assert len(done) == trials  # the study's budget, not each worker's
    assert sum(bool(t.user_attrs.get("defaults")) for t in done) == 1
    for knobs in json.loads(json.dumps(study.user_attrs[RECORD_ATTR]["enqueue"])):
        assert sum(t.user_attrs.get("enqueued") == knobs
                   for t in study.get_trials(states=(TrialState.COMPLETE,))) == 1
    assert not study.get_trials(states=(TrialState.RUNNING, TrialState.WAITING))
    assert len({t.user_attrs[WORKER] for t in done}) >= 2, "one worker ran every trial"
    # each worker ran its own trials: no trial number twice across the hosts' folders
    numbers = [p.name for h in "abc" for p in (tmp_path / f"host-{h}" / "share" /
                                               "trials").glob("trial-*.json")]
    assert len(numbers) == len(set(numbers)) == len(study.get_trials(
        states=(TrialState.COMPLETE,)))

    client = MlflowClient(tracking_uri=mlflow_server)
    exp = client.get_experiment_by_name("share")
    assert exp is not None
    parents = client.search_runs([exp.experiment_id], "tags.`tuner.role` = 'study'")
    assert len(parents) == 1
    assert parents[0].info.run_id == study.user_attrs[RECORD_ATTR]["mlflow_parent_run_id"]
    runs = client.search_runs([exp.experiment_id], "tags.`tuner.role` = 'trial'")
    assert {r.data.tags["mlflow.parentRunId"] for r in runs} == {parents[0].info.run_id}
    logged = [r.data.tags["tuner.trial"] for r in runs]
    assert sorted(logged) == sorted({str(t.number) for t in study.get_trials(
        states=(TrialState.COMPLETE,))})
    # the engine logs of every host are on the tracking server, not only on their disks
    some = next(r for r in runs if r.data.tags["tuner.trial"] == str(done[-1].number))
    assert [a.path for a in client.list_artifacts(some.info.run_id, "engine")]

    status = subprocess.run([sys.executable, "-m", "tuner", "status", "--study", "share",
                             "--storage", storage], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert f"trials: {trials} of {trials} done, 0 running" in status.stdout
    assert "best so far: trial" in status.stdout


def test_a_killed_worker_loses_nothing(postgres: Postgres, mlflow_server: str,
                                       model_dir: Path, tmp_path: Path) -> None:
    storage = postgres.create_database("optuna_kill")
    trials = 5
    first = start(creator("kill", storage, mlflow_server, model_dir, tmp_path / "host-a",
                          trials), tmp_path / "host-a", 4)
    study = wait_ready("kill", storage)
    victim = start(worker("kill", storage, tmp_path / "host-b"), tmp_path / "host-b", 4)

    def victims_trial() -> FrozenTrial | None:
        return next((t for t in study.get_trials(states=(TrialState.RUNNING,))
                     if str(t.user_attrs.get(WORKER, "")).endswith(f":{victim.pid}")), None)

    deadline = time.monotonic() + 120
    while True:  # a trial of the victim's still running a second later: a launched one
        assert victim.poll() is None, (tmp_path / "host-b" / "err.txt").read_text()[-2000:]
        assert time.monotonic() < deadline, "the victim never ran a trial"
        seen = victims_trial()
        time.sleep(1)
        lost = victims_trial()
        if seen is not None and lost is not None and lost.number == seen.number:
            break
    victim.send_signal(signal.SIGKILL)  # mid-trial
    victim.wait()
    survivor = start(worker("kill", storage, tmp_path / "host-c"), tmp_path / "host-c", 4)

    finish(first, tmp_path / "host-a")
    finish(survivor, tmp_path / "host-c")
    states = {t.number: t for t in study.get_trials()}
    assert states[lost.number].state == TrialState.FAIL  # failed by its heartbeat
    retried = [t for t in states.values() if t.state == TrialState.COMPLETE
               and t.system_attrs.get("failed_trial") == lost.number]
    assert len(retried) == 1
    assert retried[0].params == states[lost.number].params
    assert retried[0].user_attrs[WORKER] != states[lost.number].user_attrs[WORKER]
    assert len(launched(study)) == trials  # the promised number of completed trials
    assert not study.get_trials(states=(TrialState.RUNNING, TrialState.WAITING))

    # From a machine that ran nothing: every trial once, the killed one marked.
    elsewhere = tmp_path / "host-d"
    elsewhere.mkdir()
    report = subprocess.run([sys.executable, "-m", "tuner", "report", "--storage", storage,
                             "--study", "kill", "--tracking-uri", mlflow_server],
                            capture_output=True, text=True, timeout=120, cwd=elsewhere)
    assert report.returncode == 0, report.stderr
    assert f"trials whose worker died: {lost.number} (shown as interrupted)" in report.stdout
    rows = [r.split(",") for r in
            (elsewhere / "tune-runs" / "kill" / "trials.csv").read_text().splitlines()[1:]]
    finished = [t.number for t in states.values() if t.state in (TrialState.COMPLETE,
                                                                 TrialState.FAIL)]
    assert sorted(int(r[0]) for r in rows) == sorted(finished)  # each once
    assert [r[2] for r in rows if int(r[0]) == lost.number] == ["interrupted"]


def test_joining_a_study_that_does_not_exist_is_bad_input(postgres: Postgres,
                                                          tmp_path: Path) -> None:
    storage = postgres.create_database("optuna_empty")
    done = subprocess.run(with_fakes(worker("nope", storage, tmp_path)), capture_output=True,
                          text=True,
                          timeout=120, env=env(1), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "--study nope: no such study" in lines[0]


def round_of(name: str, storage: str) -> optuna.Study | None:
    """The study's re-measurement (an Optuna study beside it, per search budget), once made."""
    names = [n for n in optuna.get_all_study_names(storage=driver_url(storage))
             if n.startswith(f"{name}.remeasure-")]
    assert len(names) <= 1, names
    return optuna.load_study(study_name=names[0], storage=driver_url(storage)) if names else None


def units(round_: optuna.Study) -> list[FrozenTrial]:
    return [t for t in round_.get_trials() if UNIT in t.user_attrs]


def done_units(round_: optuna.Study) -> dict[str, FrozenTrial]:
    """Each unit's finished trial, by its candidate and repeat (exactly one each)."""
    done = [t for t in units(round_) if t.state == TrialState.COMPLETE]
    keyed = {json.dumps(t.user_attrs[UNIT], sort_keys=True): t for t in done}
    assert len(keyed) == len(done), "a unit ran twice"
    return keyed


def test_two_workers_share_the_re_measurement(postgres: Postgres, mlflow_server: str,
                                              model_dir: Path, tmp_path: Path) -> None:
    storage = postgres.create_database("optuna_remeasure")
    first = start(creator("again", storage, mlflow_server, model_dir, tmp_path / "host-a", 3,
                          remeasure=(1, 3)), tmp_path / "host-a", 2)
    wait_ready("again", storage)
    second = start(worker("again", storage, tmp_path / "host-b"), tmp_path / "host-b", 2)
    finish(first, tmp_path / "host-a")
    finish(second, tmp_path / "host-b")

    round_ = round_of("again", storage)
    assert round_ is not None
    done = done_units(round_)
    assert len(done) == len(units(round_)) == 6  # the defaults and the best, 3 starts each
    assert len({t.user_attrs[WORKER] for t in done.values()}) == 2, "one worker took them all"
    records = {h: sorted(p.name for p in (tmp_path / h / "again" / "records").glob(
        "remeasure-*.csv")) for h in ("host-a", "host-b")}
    assert records["host-a"]
    assert records["host-b"]
    assert len(set(records["host-a"]) | set(records["host-b"])) == 6  # each start on one host
    summaries = [json.loads((tmp_path / h / "again" / "summary.json").read_text())
                 for h in ("host-a", "host-b")]
    assert summaries[0]["remeasure"]["candidates"] == summaries[1]["remeasure"]["candidates"]
    assert len(summaries[0]["remeasure"]["runs"]) == 6
    assert all(r["failure"] is None for r in summaries[0]["remeasure"]["runs"])
    for h in ("host-a", "host-b"):
        assert "defaults vs best" in (tmp_path / h / "out.txt").read_text()

    client = MlflowClient(tracking_uri=mlflow_server)
    exp = client.get_experiment_by_name("again")
    assert exp is not None
    parents = client.search_runs([exp.experiment_id], "tags.`tuner.role` = 'study'")
    assert len(parents) == 1
    assert parents[0].info.status == "FINISHED"
    # the study's summary was recorded once, by one of the two
    assert len(client.get_metric_history(parents[0].info.run_id, "wall_s")) == 1

    empty = tmp_path / "host-c"
    empty.mkdir()
    status = subprocess.run([sys.executable, "-m", "tuner", "status", "--study", "again",
                             "--storage", storage], capture_output=True, text=True,
                            timeout=120, cwd=empty)
    assert status.returncode == 0, status.stderr
    assert "trials: 3 of 3 done, 0 running" in status.stdout
    assert "re-measurement: 6 of 6 fresh starts done, 0 running, 0 queued" in status.stdout
    assert "re-measured best: trial" in status.stdout
    assert list(empty.iterdir()) == []  # it ran nothing and wrote nothing


def test_a_worker_killed_mid_re_measurement_loses_nothing(
        postgres: Postgres, mlflow_server: str, model_dir: Path, tmp_path: Path) -> None:
    storage = postgres.create_database("optuna_remeasure_kill")
    first = start(creator("rekill", storage, mlflow_server, model_dir, tmp_path / "host-a", 2,
                          remeasure=(1, 3)), tmp_path / "host-a", 3)
    wait_ready("rekill", storage)
    victim = start(worker("rekill", storage, tmp_path / "host-b"), tmp_path / "host-b", 3)

    def victims_unit() -> FrozenTrial | None:
        found = round_of("rekill", storage)
        return None if found is None else next(
            (t for t in units(found) if t.state == TrialState.RUNNING
             and str(t.user_attrs.get(WORKER, "")).endswith(f":{victim.pid}")), None)

    deadline = time.monotonic() + 180
    while True:  # a unit of the victim's still running a second later
        assert victim.poll() is None, (tmp_path / "host-b" / "err.txt").read_text()[-2000:]
        assert time.monotonic() < deadline, "the victim never took a unit"
        seen = victims_unit()
        time.sleep(1)
        lost = victims_unit()
        if seen is not None and lost is not None and lost.number == seen.number:
            break
    victim.send_signal(signal.SIGKILL)  # mid-start
    victim.wait()
    finish(first, tmp_path / "host-a")

    round_ = round_of("rekill", storage)
    assert round_ is not None
    trials = {t.number: t for t in round_.get_trials()}
    assert trials[lost.number].state == TrialState.FAIL  # failed by its heartbeat
    retried = [t for t in trials.values() if t.system_attrs.get("failed_trial") == lost.number]
    assert len(retried) == 1
    assert retried[0].state == TrialState.COMPLETE
    assert retried[0].user_attrs[UNIT] == lost.user_attrs[UNIT]
    assert retried[0].user_attrs[WORKER] != lost.user_attrs[WORKER]
    assert len(done_units(round_)) == 6
    summary = json.loads((tmp_path / "host-a" / "rekill" / "summary.json").read_text())
    assert [r["failure"] for r in summary["remeasure"]["runs"]] == [None] * 6
    assert LOST not in (tmp_path / "host-a" / "out.txt").read_text()


@pytest.mark.slow
def test_two_llamacpp_workers_run_one_study(postgres: Postgres, mlflow_server: str,
                                            gguf_model: Path, tmp_path: Path) -> None:
    """Real engines: llama.cpp workers on one study (each its own folder, as on separate
    hosts), through PostgreSQL and the MLflow server. One worker is killed (SIGKILL) while
    its engine serves a trial: its heartbeat stops, the trial is failed and run again by a
    worker that lives; nothing is lost (storage, MLflow and the report agree). Then, from a
    folder that ran nothing: status, report and export."""
    storage = postgres.create_database("optuna_llama")
    real = {**os.environ, "TUNER_PIN_CORES": "0"}  # three hosts' worth of processes on one

    def run(cmd: list[str], folder: Path) -> subprocess.Popen[str]:
        folder.mkdir(parents=True, exist_ok=True)
        return subprocess.Popen(cmd, cwd=folder, env=real, text=True,
                                stdout=(folder / "out.txt").open("w"),
                                stderr=(folder / "err.txt").open("w"))

    first = run([sys.executable, "-m", "tuner", "--engine", "llamacpp",
                 "--workload", str(DATA / "workload-llamacpp-ci.yaml"),
                 "--model", str(gguf_model), "--trials", "3", "--remeasure-top", "1",
                 "--repeats", "1", "--enqueue", str(DATA / "enqueue-llamacpp.yaml"),
                 "--storage", storage, "--tracking-uri", mlflow_server, "--heartbeat", "2",
                 "--study-name", "llama", "--seed", "1", "--out", str(tmp_path / "host-a")],
                tmp_path / "host-a")
    study = wait_ready("llama", storage, timeout=300)
    victim = run(worker("llama", storage, tmp_path / "host-b"), tmp_path / "host-b")

    def victims_trial() -> FrozenTrial | None:
        return next((t for t in study.get_trials(states=(TrialState.RUNNING,))
                     if str(t.user_attrs.get(WORKER, "")).endswith(f":{victim.pid}")), None)

    deadline = time.monotonic() + 300
    while True:  # the victim's trial still running 3 s on: its engine started, serving
        assert victim.poll() is None, (tmp_path / "host-b" / "err.txt").read_text()[-2000:]
        assert time.monotonic() < deadline, "the victim never ran a trial"
        seen = victims_trial()
        time.sleep(3)
        lost = victims_trial()
        if seen is not None and lost is not None and lost.number == seen.number:
            break
    victim.send_signal(signal.SIGKILL)  # its engine dies with it (PR_SET_PDEATHSIG)
    victim.wait()
    survivor = run(worker("llama", storage, tmp_path / "host-c"), tmp_path / "host-c")
    finish(first, tmp_path / "host-a", timeout=1500)
    finish(survivor, tmp_path / "host-c", timeout=600)

    states = {t.number: t for t in study.get_trials()}
    assert states[lost.number].state == TrialState.FAIL  # failed by its heartbeat
    retried = [t for t in states.values() if t.state == TrialState.COMPLETE
               and t.system_attrs.get("failed_trial") == lost.number]
    assert len(retried) == 1
    assert retried[0].user_attrs[WORKER] != states[lost.number].user_attrs[WORKER]
    assert len(launched(study)) == 3
    assert not study.get_trials(states=(TrialState.RUNNING, TrialState.WAITING))
    round_ = round_of("llama", storage)
    assert round_ is not None
    # the defaults and the best (fewer when engines on one small host miss the SLOs)
    assert 1 <= len(done_units(round_)) == len(units(round_)) <= 2
    summaries = [json.loads((tmp_path / h / "llama" / "summary.json").read_text())
                 for h in ("host-a", "host-c")]
    assert summaries[0]["remeasure"]["candidates"] == summaries[1]["remeasure"]["candidates"]
    assert summaries[0]["engine"] == "llamacpp"
    assert summaries[0]["defaults_trial"]["defaults"] is True
    ran_here = [json.loads(p.read_text()) for h in ("host-a", "host-c")
                for p in (tmp_path / h / "llama" / "trials").glob("*.json")]
    variants = {t["config"].get("quantization") for t in ran_here
                if not t["rejected_before_launch"] and not t["defaults"]}
    assert {"Q8_0", "Q4_0"} <= variants  # the quantization variant is a knob that really ran
    ok = [t for t in ran_here if t["outcome"] == "ok"]
    assert ok
    assert all("tiny-llama-" in t["command"] for t in ok)
    for m in summaries[0]["remeasure"]["candidates"]:
        assert m["cost"] is None or m["cost"]["low"] <= m["cost"]["value"] <= m["cost"]["high"]

    empty = tmp_path / "host-d"
    empty.mkdir()

    def tune_here(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "tuner", *args], capture_output=True,
                              text=True, timeout=120, cwd=empty)
        assert done.returncode == 0, done.stderr
        return done

    status = tune_here("status", "--study", "llama", "--storage", storage)
    assert "trials: 3 of 3 done, 0 running" in status.stdout
    assert "fresh starts done, 0 running, 0 queued" in status.stdout
    assert "re-measured best: trial" in status.stdout

    # Report and export from the storage (PostgreSQL) and the MLflow server alone.
    report = tune_here("report", "--storage", storage, "--study", "llama",
                       "--tracking-uri", mlflow_server)
    assert "storage alone" not in report.stdout  # the summary came from MLflow
    assert f"trials whose worker died: {lost.number} (shown as interrupted)" in report.stdout
    rows = [r.split(",") for r in
            (empty / "tune-runs" / "llama" / "trials.csv").read_text().splitlines()[1:]]
    complete = sorted(t.number for t in states.values() if t.state == TrialState.COMPLETE)
    assert sorted(int(r[0]) for r in rows) == sorted([*complete, lost.number])  # each once
    assert [r[2] for r in rows if int(r[0]) == lost.number] == ["interrupted"]
    client = MlflowClient(mlflow_server)
    (parent,) = client.search_runs(
        [client.get_experiment_by_name("llama").experiment_id],
        filter_string="tags.`tuner.role` = 'study'")
    logged = client.search_runs(
        [parent.info.experiment_id], max_results=1000,
        filter_string=f"tags.`tuner.role` = 'trial' and "
                      f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    assert sorted(int(r.data.tags["tuner.trial"]) for r in logged) == complete
    winner = summaries[0]["best_trial"]
    exported = tune_here("export", "--storage", storage, "--study", "llama",
                         "--tracking-uri", mlflow_server, "--format", "command")
    if winner is not None:  # the re-measured winner, as the workers' summary chose it
        assert f"trial {winner['number']} " in exported.stdout
    assert "llama-server" in exported.stdout
