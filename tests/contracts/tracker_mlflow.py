"""The MLflow tracker under the tracker contract: a case per store, read back with MLflow's own
client (the study's record is its parent run, a trial's its nested run; params, metrics, tags,
status and artifacts as MLflow holds them)."""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from mlflow.entities import Run
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from tests.contracts.tracker import RecordedStart, RecordedStudy, RecordedTrial, TrackerCase
from tests.integration.conftest import MlflowServer
from tuner.study import RunFolder, Tracker
from tuner.tracking import ENGINE_DECIDES, FINISHED_STATES, MlflowTracker, Outbox


class MlflowCase(TrackerCase):
    """MlflowTracker as the tuner makes it for a study (``tuner.commands.prepare``): on
    ``uri``, its artifacts in ``artifact_dir`` (``mlartifacts/`` beside a local SQLite store;
    None: the store's own), with its outbox in the run folder."""

    def __init__(self, folder: Path, uri: str, artifact_dir: Path | None = None,
                 server: MlflowServer | None = None) -> None:
        super().__init__(folder)
        self.uri, self.artifact_dir, self.server = uri, artifact_dir, server
        self.client = MlflowClient(tracking_uri=uri)

    def tracker(self, run_folder: Path) -> Tracker:
        return MlflowTracker(self.uri, self.artifact_dir,
                             outbox=Outbox(RunFolder(run_folder).outbox))

    def studies(self, name: str) -> list[str]:
        exp = self.client.get_experiment_by_name(name)
        if exp is None:
            return []
        runs = self.client.search_runs(
            [exp.experiment_id], f"tags.`tuner.role` = 'study' and tags.`tuner.study` = '{name}'")
        return [r.info.run_id for r in runs]

    def study(self, study_id: str) -> RecordedStudy | None:
        try:
            run = self.client.get_run(study_id)
        except MlflowException:
            return None
        return RecordedStudy(name=run.data.tags["tuner.study"], tags=run.data.tags,
                             params=run.data.params, ended=run.info.status == "FINISHED",
                             metrics=run.data.metrics, files=self.files(run))

    def trial_runs(self, study_id: str) -> list[Run]:
        experiment = self.client.get_run(study_id).info.experiment_id
        return self.client.search_runs([experiment], "tags.`tuner.role` = 'trial' and "
                                       f"tags.`mlflow.parentRunId` = '{study_id}'")

    def trials(self, study_id: str) -> list[RecordedTrial]:
        found = [RecordedTrial(
            number=int(r.data.tags["tuner.trial"]), outcome=r.data.tags["tuner.outcome"],
            config={k.removeprefix("knob."): None if v == ENGINE_DECIDES else v
                    for k, v in r.data.params.items() if k.startswith("knob.")},
            cost=r.data.metrics.get("cost_per_m_output_tokens"),
            complete=r.info.status in FINISHED_STATES) for r in self.trial_runs(study_id)]
        return sorted(found, key=lambda t: t.number)

    def starts(self, study_id: str) -> list[RecordedStart]:
        experiment = self.client.get_run(study_id).info.experiment_id
        runs = self.client.search_runs([experiment], "tags.`tuner.role` = 'start' and "
                                       f"tags.`mlflow.parentRunId` = '{study_id}'")
        found = [RecordedStart(
            trial=int(r.data.tags["tuner.trial"]), start=int(r.data.tags["tuner.start"]),
            pair=int(r.data.tags["tuner.pair"]), capacity=r.data.metrics.get("max_load"),
            complete=r.info.status in FINISHED_STATES) for r in runs]
        return sorted(found, key=lambda s: (s.trial, s.start))

    def trial_files(self, study_id: str, number: int) -> set[str]:
        runs = [r for r in self.trial_runs(study_id) if r.data.tags["tuner.trial"] == str(number)]
        assert len(runs) == 1, f"trial {number} has {len(runs)} runs"
        return set(self.files(runs[0]))

    def files(self, run: Run) -> dict[str, bytes]:
        """The run's artifacts, downloaded through the client (a server's through it)."""
        if not self.client.list_artifacts(run.info.run_id):
            return {}
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(self.client.download_artifacts(run.info.run_id, "", tmp))
            return {str(p.relative_to(root)): p.read_bytes()
                    for p in sorted(root.rglob("*")) if p.is_file()}

    def outage(self) -> AbstractContextManager[None]:
        assert self.server is not None, "a local store is a file on this host: never down"
        return paused(self.server)


@contextmanager
def paused(server: MlflowServer) -> Iterator[None]:
    """The server and its workers stopped (SIGSTOP) while within: it accepts connections and
    answers nothing, as a host that went away does; continued (SIGCONT) at once after."""
    assert server.process is not None
    os.killpg(server.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.killpg(server.process.pid, signal.SIGCONT)
