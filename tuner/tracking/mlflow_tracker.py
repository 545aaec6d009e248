"""Record a study in MLflow: one parent run per study, one nested run per trial, and one per
fresh start of its re-measurement (:mod:`tuner.tracking.start_runs`).

The experiment opens in MLflow's UI as model training, with a saved view of its trials
(:mod:`tuner.tracking.runs_view`); a trial's run is named by its number, outcome and cost.

Uses ``MlflowClient`` with explicit run ids (no global active run). The study's creator makes
the parent run and the study stores its id; every worker (on any host, against one tracking
server) nests its trials under that id. A resumed study without a stored id finds its parent
run by the ``tuner.study`` tag and keeps adding to it.
With the default local store (SQLite), artifacts go next to it in the run folder.

With an outbox (:mod:`tuner.tracking.outbox`), every trial and the study's end are kept in the
run folder first and delivered from there, each once (:mod:`tuner.tracking.delivery`): a
tracking server that is down holds nothing up, and what it missed is logged when it answers
again, by the same command run again, or by ``tune report --dir``.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.core import StudyError, without_password
from tuner.metric_registry import METRICS, TTFT_P95
from tuner.metrics import money
from tuner.study import RunFolder, TrialResult
from tuner.study.repeats import MeasuredRun
from tuner.tracking.delivery import (
    bound_client_retries,
    deliver_end,
    deliver_trial,
    logged_trials,
    reachable,
)
from tuner.tracking.outbox import Outbox, StudyEnd
from tuner.tracking.runs_view import experiment_tags, runs_page
from tuner.tracking.start_runs import deliver_starts

if TYPE_CHECKING:
    from mlflow.entities import Param

# MLflow (1-2 s to import) is imported when a tracker is made, not with this module: a command
# that stops at a bad option, `tune bench` and the other commands without a study do not pay.
# Once a tracker exists, the function-level imports below are a dictionary look-up.

log = logging.getLogger(__name__)

PARAM_LIMIT = 6000


ENGINE_DECIDES = "(engine decides)"


def flat_params(config: dict[str, Any], prefix: str = "knob.") -> dict[str, str]:
    """Knobs as MLflow params; ``None`` (a default the engine picks itself) says so."""
    return {f"{prefix}{k}": ENGINE_DECIDES if v is None else str(v)
            for k, v in sorted(config.items())}


def _param(key: str, value: object) -> Param:
    from mlflow.entities import Param

    text = str(value)
    return Param(key, text if len(text) <= PARAM_LIMIT else text[:PARAM_LIMIT - 3] + "...")


def trial_run_name(r: TrialResult) -> str:
    """A trial's run as the runs table lists it: number, outcome and, when it met the SLOs,
    its cost (``trial-004 ok $0.1234/M``); a start of a paired comparison by its index and
    pair (``start-003 pair 2 ok $0.1234/M``)."""
    name = (f"trial-{r.number:03d} {r.outcome}" if r.pair is None
            else f"start-{r.number:03d} pair {r.pair} {r.outcome}")
    return f"{name} {money(r.cost_per_m_output_tokens)}/M" if r.feasible else name


def quality_metrics(r: TrialResult) -> dict[str, float]:
    """The quality check's figures, for a trial that was checked."""
    q = r.quality
    if q is None:
        return {}
    m = {"quality.min_token_agreement": q.min_token_agreement, "quality.seconds": q.seconds,
         "quality.passed": float(q.passed)}
    if q.agreement is not None:
        a = q.agreement
        m["quality.token_agreement"] = a.token_agreement
        m["quality.identical_share"] = a.identical / a.prompts
        if a.logprob_mean_abs_diff is not None:
            m["quality.logprob_mean_abs_diff"] = a.logprob_mean_abs_diff
    return m


class MlflowTracker:
    def __init__(self, tracking_uri: str, artifact_dir: Path | None = None,
                 outbox: Outbox | None = None) -> None:
        from mlflow.tracking import MlflowClient

        # MLflow sets its own logger to INFO when imported; its database-migration lines are
        # noise to a tuner's user (tuner's --debug still shows ours).
        logging.getLogger("mlflow").setLevel(logging.WARNING)
        # Its store logs a database error (a full disk) with a traceback, then raises it;
        # tuner says it in one line (and --debug shows the traceback).
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
        self.uri = tracking_uri
        self.shown = without_password(tracking_uri)  # in messages: no password
        if self.shown != tracking_uri:  # MLflow prints each run's link with the URI's password
            os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
        self.artifact_dir = artifact_dir
        self.client = MlflowClient(tracking_uri=tracking_uri)
        self.experiment_id = ""
        self.parent_id = ""
        self.outbox = outbox
        self.down = False
        if outbox is not None:
            bound_client_retries()

    def start_study(self, name: str, tags: dict[str, str], params: dict[str, str],
                    parent_id: str | None = None) -> str:
        """The study's parent run: ``parent_id`` (the one the study stored) when this store
        has it, else the run tagged with the study's name, else a new one."""
        from mlflow.exceptions import MlflowException

        if not reachable(self.uri):
            raise StudyError(f"MLflow at {self.shown} does not answer; start it, or give another "
                             "--tracking-uri (or TUNER_TRACKING_URI)")
        try:
            if parent_id and self._join(parent_id):
                self._mark_experiment()
                return self.parent_id
            exp = self.client.get_experiment_by_name(name)
            if exp is None:
                location = self.artifact_dir.resolve().as_uri() if self.artifact_dir else None
                self.experiment_id = self.client.create_experiment(
                    name, artifact_location=location, tags=experiment_tags())
            else:
                self.experiment_id = exp.experiment_id
                self._mark_experiment()
            found = self.client.search_runs([self.experiment_id],
                                            filter_string=f"tags.`tuner.study` = '{name}'",
                                            max_results=1)
            if found:
                self.parent_id = found[0].info.run_id
                self.client.update_run(self.parent_id, status="RUNNING")
            else:
                run = self.client.create_run(self.experiment_id, run_name=name, tags={
                    "tuner.study": name, "tuner.role": "study", **tags})
                self.parent_id = run.info.run_id
                self.client.log_batch(self.parent_id,
                                      params=[_param(k, v) for k, v in params.items()])
        except MlflowException as exc:
            raise StudyError(f"MLflow at {self.shown}: {exc.message}") from exc
        return self.parent_id

    def _mark_experiment(self) -> None:
        """An experiment made before (or elsewhere) gets the kind and the trials' view too."""
        have = self.client.get_experiment(self.experiment_id).tags
        for key, value in experiment_tags().items():
            if key not in have:
                self.client.set_experiment_tag(self.experiment_id, key, value)

    def runs_page(self) -> str:
        """The study's trials in MLflow's UI, after the UI's address (once the study started)."""
        return runs_page(self.experiment_id)

    def _join(self, parent_id: str) -> bool:
        """Nest this worker's trials under the study's parent run, if this store has it."""
        from mlflow.exceptions import MlflowException

        try:
            run = self.client.get_run(parent_id)
        except MlflowException:
            log.warning("MLflow at %s has no run %s (the study's parent); using the study's "
                        "run in this store", self.shown, parent_id)
            return False
        self.experiment_id, self.parent_id = run.info.experiment_id, parent_id
        return True

    def log_trial(self, result: TrialResult) -> None:
        from mlflow.exceptions import MlflowException

        if self.outbox is not None:
            self._keep_target()
            self.outbox.keep_trial(result)  # a full disk here stops the study: it is raised
            self.deliver()
            return
        try:
            self.record_trial(result)
        except (MlflowException, OSError) as exc:
            log.warning("could not record trial %s in MLflow: %s", result.number, exc)

    def catch_up(self, results: list[TrialResult]) -> None:
        """Log the trials of ``results`` that MLflow does not have (a run stopped between
        storing a trial and logging it), and whatever the outbox kept."""
        from mlflow.exceptions import MlflowException

        if self.outbox is None or not (results or self.outbox.pending()):
            return
        try:
            logged = logged_trials(self.client, self.experiment_id, self.parent_id) if \
                reachable(self.uri) else None
        except (MlflowException, OSError):
            logged = None  # not known now: the outbox's own records still go
        self._keep_target()
        for r in results:
            if logged is not None and r.number not in logged:
                self.outbox.keep_trial(r)
        self.deliver()

    def _keep_target(self) -> None:
        assert self.outbox is not None
        target = self.outbox.target()
        if target is None or (target.experiment_id, target.parent_id) != (self.experiment_id,
                                                                          self.parent_id):
            self.outbox.keep_target(self.uri, self.experiment_id, self.parent_id)

    def deliver(self) -> bool:
        """Log what the outbox holds, each record once; True when nothing is left. A server
        that does not answer keeps it all there (said once per outage), the study going on."""
        outbox = self.outbox
        if outbox is None or outbox.pending() == 0:
            return True
        count = outbox.pending()
        failed = self.send_kept(outbox)
        if failed is not None:
            if not self.down:
                log.warning("MLflow at %s unreachable (%s); %d record(s) kept in %s, logged "
                            "when it answers again, or by: tune report --dir %s", self.shown,
                            failed, outbox.pending(), outbox.folder, outbox.folder.parent)
            self.down = True
            return False
        if self.down:
            log.warning("MLflow at %s answers again: %d kept record(s) logged", self.shown,
                        count)
        self.down = False
        return True

    def send_kept(self, outbox: Outbox) -> str | None:
        """Deliver ``outbox``; None when all of it is logged, else why it stopped."""
        try:
            if not reachable(self.uri):
                return "it does not answer"
            logged = logged_trials(self.client, self.experiment_id, self.parent_id)
            for r in outbox.trials():
                deliver_trial(self.client, r, logged.get(r.number, []), self.record_trial)
                outbox.delivered_trial(r.number)
            end = outbox.end()
            if end is not None:
                deliver_starts(self.client, self.experiment_id, self.parent_id, end.starts)
                deliver_end(self.client, self.parent_id, end)
                outbox.delivered_end()
        except Exception as exc:  # MLflow's, requests', sockets': none may stop the study
            return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        outbox.tidy()
        return None

    def record_trial(self, r: TrialResult) -> None:
        """Log one trial now (raises when MLflow fails)."""
        from mlflow.entities import Metric, RunTag

        tags = {"mlflow.parentRunId": self.parent_id, "tuner.role": "trial",
                "tuner.trial": str(r.number), "tuner.outcome": r.outcome,
                "tuner.defaults": str(r.defaults).lower()}
        if r.quality is not None:
            tags["tuner.quality"] = "passed" if r.quality.passed else "failed"
        if r.pair is not None:  # a start of tune measure --against: its index and pair
            tags |= {"tuner.start": str(r.number), "tuner.pair": str(r.pair)}
        run = self.client.create_run(self.experiment_id, run_name=trial_run_name(r), tags=tags)
        rid = run.info.run_id
        params = [_param(k, v) for k, v in flat_params(r.config).items()]
        params += [_param("outcome", r.outcome), _param("defaults", r.defaults),
                   _param("launch_command", r.command or "(not launched)"),
                   _param("accelerators", r.accelerators), _param("starts", r.starts)]
        if r.detail:
            params.append(_param("detail", r.detail))
        if r.quality is not None:
            params += [_param(f"quality.lossy.{k}", v) for k, v in r.quality.lossy.items()]
        for key in ("image", "image_digest", "container_id"):
            if key in r.launch:
                params.append(_param(key, r.launch[key]))
        now = int(time.time() * 1000)
        metrics = [Metric(k, float(v), now, 0) for k, v in self._trial_metrics(r).items()]
        metrics += [Metric("start.cost_per_m_output_tokens", c, now, i)
                    for i, c in enumerate(r.costs)]  # each start of an intensified trial
        if r.capacity is not None:
            for i, s in enumerate(r.capacity.steps):
                metrics.append(Metric("capacity.load", s.load, now, i))
                metrics.append(Metric("capacity.passed", float(s.slo.passed), now, i))
                ttft = TTFT_P95.value(s)
                if ttft is not None:
                    metrics.append(Metric(f"capacity.{TTFT_P95.key}", ttft, now, i))
                metrics.append(Metric("capacity.output_tokens_per_s",
                                      s.output_token_throughput, now, i))
        self.client.log_batch(rid, metrics=metrics, params=params,
                              tags=[RunTag("tuner.detail", r.detail[:500])] if r.detail else [])
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "trial.json").write_text(r.model_dump_json(indent=2))
            if r.command:
                (Path(tmp) / "launch_command.sh").write_text(r.command + "\n")
            if "container_spec" in r.launch:
                (Path(tmp) / "container_spec.json").write_text(
                    json.dumps(r.launch["container_spec"], indent=2, default=str))
            self.client.log_artifacts(rid, tmp)
        answers = r.quality.answers_path if r.quality is not None else None
        for path, folder in ((r.log_path, "engine"), (r.records_path, "records"),
                             (answers, "quality")):
            if path and Path(path).is_file():
                self.client.log_artifact(rid, path, folder)
        self.client.set_terminated(rid, "FINISHED" if r.outcome in ("ok", "slo_infeasible")
                                   else "FAILED")

    @staticmethod
    def _trial_metrics(r: TrialResult) -> dict[str, float]:
        m: dict[str, float] = {"startup_s": r.timing.startup_s, "measure_s": r.timing.measure_s,
                               "teardown_s": r.timing.teardown_s, "wall_s": r.timing.wall_s}
        if r.cost_per_m_output_tokens is not None:
            m["cost_per_m_output_tokens"] = r.cost_per_m_output_tokens
        if r.max_load is not None:  # a lower bound is not the capacity: its own key
            m["max_load_at_least" if r.capacity_bound else "max_load"] = r.max_load
        s = r.best
        if s is not None:
            for metric in METRICS:
                value = metric.value(s)
                if metric.tracked and value is not None:
                    m[metric.key] = value
            if s.server is not None and s.server.prefix_cache_hit_rate is not None:
                m["prefix_cache_hit_rate"] = s.server.prefix_cache_hit_rate
        return m | quality_metrics(r)

    def finish_study(self, metrics: dict[str, float], artifacts: list[tuple[str, Path]],
                     texts: dict[str, str], tags: dict[str, str] | None = None,
                     starts: Sequence[MeasuredRun] = ()) -> None:
        if self.outbox is not None:
            self._keep_target()
            self.outbox.keep_end(StudyEnd(metrics=metrics, texts=texts, tags=tags or {},
                                          starts=list(starts),
                                          artifacts=[
                (folder, str(path.resolve())) for folder, path in artifacts]))
            if not self.deliver():
                log.warning("the study's end is kept in %s for MLflow at %s; log it with: tune "
                            "report --dir %s", self.outbox.folder, self.shown,
                            self.outbox.folder.parent)
            return
        from mlflow.entities import Metric, RunTag
        from mlflow.exceptions import MlflowException

        try:
            deliver_starts(self.client, self.experiment_id, self.parent_id, starts)
            now = int(time.time() * 1000)
            self.client.log_batch(self.parent_id, metrics=[Metric(k, float(v), now, 0)
                                                           for k, v in metrics.items()],
                                  tags=[RunTag(k, v) for k, v in (tags or {}).items()])
            for folder, path in artifacts:
                if path.is_file():
                    self.client.log_artifact(self.parent_id, str(path), folder or None)
            with tempfile.TemporaryDirectory() as tmp:
                for name, text in texts.items():
                    (Path(tmp) / name).write_text(text)
                self.client.log_artifacts(self.parent_id, tmp)
            self.client.set_terminated(self.parent_id, "FINISHED")
        except (MlflowException, OSError) as exc:
            raise StudyError(f"MLflow at {self.shown}: could not finish the study run: "
                             f"{exc}") from exc


def deliver_kept(run_dir: Path) -> str | None:
    """Log what a run left in its outbox (``tune report --dir``); the line to say, None when
    nothing was kept."""
    outbox = Outbox(RunFolder(run_dir).outbox)
    target = outbox.target()
    count = outbox.pending()
    if target is None or count == 0:
        return None
    tracker = MlflowTracker(target.uri, outbox=outbox)
    tracker.experiment_id, tracker.parent_id = target.experiment_id, target.parent_id
    failed = tracker.send_kept(outbox)
    if failed is None:
        return f"MLflow at {target.uri}: {count} record(s) kept by the study logged now"
    return (f"MLflow at {target.uri} still unreachable ({failed}): {outbox.pending()} "
            f"record(s) stay kept in {outbox.folder}; run this again once it answers")

