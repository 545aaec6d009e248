"""The tracker contract (``tuner/study/tracker.py``) as one suite every tracker passes.

A test module subclasses :class:`TrackerContract` and gives a ``tracker_case`` fixture: a
:class:`TrackerCase` that makes trackers on one store (each as another process of the study
would: its own run folder) and reads back what the store holds through the implementation's
own reader (for MLflow, ``MlflowClient``), translated into :class:`RecordedStudy` and
:class:`RecordedTrial`. What the suite checks, from the protocol's contract:

- ``start_study`` returns the study's id; a process given that stored id joins the same
  record; a resumed study without it finds its record; a stored id the store lacks falls
  back to the study's record (or a new one): one record per study, always;
- ``log_trial`` records each finished trial once under the study, from any number of
  processes; ``catch_up`` records the given trials the store lacks, and none twice;
- ``finish_study`` records the study's metrics, files and texts and ends its record, and each
  fresh start of its re-measurement once, by its trial, start and pair;
- a store that goes down after the study started holds nothing up and loses nothing: what
  it missed is recorded by the same command run again (:class:`TrackerOutageContract`, run
  on a tracking server: a local file, or no store at all, cannot be down);
- nothing is written into the working directory.

A tracker that records nothing (``TrackerCase.records`` False, the NullTracker) accepts every
call, raises nothing and its reader finds nothing.
"""

from __future__ import annotations

import os
import uuid
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.unit.fakes.trials import trial
from tuner.study import Tracker, TrialResult
from tuner.study.repeats import MeasuredRun

TAGS = {"tuner.engine": "contract-engine"}
PARAMS = {"engine": "contract-engine", "model": "tiny-llama", "seed": "3"}
MISSING_ID = "f" * 32
"""A stored id that no store has (a study whose store was replaced)."""


@dataclass
class RecordedTrial:
    """A trial as a store holds it."""

    number: int
    outcome: str
    config: dict[str, str | None]
    """The knobs as text; None: a default the engine picks itself."""
    cost: float | None
    complete: bool
    """The record is whole (not an attempt that broke off half-way)."""


@dataclass
class RecordedStudy:
    """A study as a store holds it."""

    name: str
    tags: dict[str, str]
    params: dict[str, str]
    ended: bool
    metrics: dict[str, float]
    files: dict[str, bytes]
    """Every file of the study's record by its path there, with its content."""


@dataclass
class RecordedStart:
    """A fresh start of the re-measurement as a store holds it."""

    trial: int
    start: int
    pair: int
    capacity: float | None
    complete: bool


class TrackerCase(ABC):
    """One tracker implementation on one store."""

    records: bool = True
    """False: a tracker that records nothing."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.runs = 0

    def run_folder(self) -> Path:
        """A run folder of its own for each tracker (each process of a study has one)."""
        self.runs += 1
        path = self.folder / f"run-{self.runs}"
        path.mkdir(parents=True)
        return path

    @abstractmethod
    def tracker(self, run_folder: Path) -> Tracker:
        """A new tracker on the case's store, as a process with ``run_folder`` makes it."""

    @abstractmethod
    def studies(self, name: str) -> list[str]:
        """The ids of the records of study ``name`` in the store."""

    @abstractmethod
    def study(self, study_id: str) -> RecordedStudy | None:
        """The study's record, None when the store has none."""

    @abstractmethod
    def trials(self, study_id: str) -> list[RecordedTrial]:
        """Every trial record under the study (twice if recorded twice), by number."""

    @abstractmethod
    def starts(self, study_id: str) -> list[RecordedStart]:
        """Every start record under the study (twice if recorded twice), by trial and start."""

    @abstractmethod
    def trial_files(self, study_id: str, number: int) -> set[str]:
        """The paths of the files kept with trial ``number``'s record."""

    def outage(self) -> AbstractContextManager[None]:
        """The store down while within; only a store that can be down (a server) has one, and
        its module runs :class:`TrackerOutageContract`."""
        raise NotImplementedError(f"{type(self).__name__} has no store that can be down")


def expected(result: TrialResult) -> RecordedTrial:
    """What a store's record of ``result`` says."""
    return RecordedTrial(number=result.number, outcome=result.outcome,
                         config={k: None if v is None else str(v)
                                 for k, v in result.config.items()},
                         cost=result.cost_per_m_output_tokens, complete=True)


class TrackerContract:
    """Subclass as ``TestXxx`` in a module that provides a ``tracker_case`` fixture."""

    @pytest.fixture
    def name(self) -> str:
        """A study of the test's own (the store may be shared by the module's tests)."""
        return f"contract-{uuid.uuid4().hex[:12]}"

    @pytest.fixture
    def results(self, tmp_path: Path) -> list[TrialResult]:
        """Three finished trials: the defaults that met the SLOs, one that met none, one whose
        engine crashed under load (with its log and records)."""
        log, records = tmp_path / "trial-002.log", tmp_path / "trial-002.csv"
        log.write_text("engine: serving\nSegmentation fault\n")
        records.write_text("index,output_tokens\n0,8\n")
        defaults = trial(0, 0.25, config={"max_num_seqs": 64, "block_size": None},
                         defaults=True).model_copy(update={"command": "engine --seqs 64"})
        return [defaults,
                trial(1, None, config={"max_num_seqs": 512, "block_size": 16}),
                TrialResult(number=2, config={"max_num_seqs": 256, "block_size": 32},
                            defaults=False, outcome="crashed_during_load",
                            detail="engine exited with code 139 under load",
                            command="engine --seqs 256", log_path=str(log),
                            records_path=str(records))]

    @pytest.fixture
    def starts(self, tmp_path: Path) -> list[MeasuredRun]:
        """Two repeats of the defaults and a candidate, paired; one start that failed."""
        records = tmp_path / "remeasure-001-0.csv"
        records.write_text("index,output_tokens\n0,8\n")
        return [MeasuredRun(engine="contract-engine", trial=t, defaults=t == 0, repeat=rep,
                            load=load, usd_per_hour=1.0, records_path=str(records),
                            failure=None if load else "crashed_during_load: exit 139")
                for t, rep, load in ((0, 0, 40.0), (1, 0, 48.0), (0, 1, 42.0), (1, 1, 0.0))]

    def expect_starts(self, case: TrackerCase, study_id: str,
                      starts: list[MeasuredRun]) -> None:
        want = sorted((r.trial, r.repeat, r.repeat, r.load or None, True) for r in starts)
        got = [(s.trial, s.start, s.pair, s.capacity, s.complete)
               for s in case.starts(study_id)]
        assert got == (want if case.records else [])

    def expect_trials(self, case: TrackerCase, study_id: str,
                      results: list[TrialResult]) -> None:
        got = case.trials(study_id)
        want = [expected(r) for r in sorted(results, key=lambda r: r.number)]
        assert got == (want if case.records else [])

    def test_start_study_makes_one_record_and_returns_its_id(
            self, tracker_case: TrackerCase, name: str) -> None:
        study_id = tracker_case.tracker(tracker_case.run_folder()).start_study(
            name, tags=TAGS, params=PARAMS)
        assert isinstance(study_id, str)
        if not tracker_case.records:
            assert tracker_case.studies(name) == []
            return
        assert study_id
        assert tracker_case.studies(name) == [study_id]
        study = tracker_case.study(study_id)
        assert study is not None
        assert study.name == name
        assert TAGS.items() <= study.tags.items()
        assert study.params == PARAMS
        assert not study.ended

    def test_a_process_given_the_stored_id_joins_that_record(
            self, tracker_case: TrackerCase, name: str) -> None:
        study_id = tracker_case.tracker(tracker_case.run_folder()).start_study(
            name, tags=TAGS, params=PARAMS)
        joined = tracker_case.tracker(tracker_case.run_folder()).start_study(
            name, tags={}, params={}, parent_id=study_id)
        assert joined == study_id
        assert tracker_case.studies(name) == ([study_id] if tracker_case.records else [])

    def test_a_resumed_study_without_its_id_finds_its_record(
            self, tracker_case: TrackerCase, name: str) -> None:
        study_id = tracker_case.tracker(tracker_case.run_folder()).start_study(
            name, tags=TAGS, params=PARAMS)
        resumed = tracker_case.tracker(tracker_case.run_folder()).start_study(
            name, tags=TAGS, params=PARAMS)
        assert resumed == study_id
        assert tracker_case.studies(name) == ([study_id] if tracker_case.records else [])

    def test_a_stored_id_the_store_lacks_falls_back_to_the_study_s_record(
            self, tracker_case: TrackerCase, name: str) -> None:
        first = tracker_case.tracker(tracker_case.run_folder()).start_study(
            name, tags=TAGS, params=PARAMS, parent_id=MISSING_ID)
        again = tracker_case.tracker(tracker_case.run_folder()).start_study(
            name, tags=TAGS, params=PARAMS, parent_id=MISSING_ID)
        assert again == first
        if tracker_case.records:
            assert first != MISSING_ID
            assert tracker_case.studies(name) == [first]
            assert tracker_case.study(first) is not None
        else:
            assert tracker_case.studies(name) == []

    def test_each_finished_trial_is_recorded_once_with_its_figures_and_files(
            self, tracker_case: TrackerCase, name: str, results: list[TrialResult]) -> None:
        tracker = tracker_case.tracker(tracker_case.run_folder())
        study_id = tracker.start_study(name, tags=TAGS, params=PARAMS)
        for result in results:
            tracker.log_trial(result)
        self.expect_trials(tracker_case, study_id, results)
        files = {Path(p).name for p in tracker_case.trial_files(study_id, 2)}
        assert ({"trial-002.log", "trial-002.csv"} <= files) if tracker_case.records else (
            files == set())

    def test_trials_of_several_processes_land_under_one_study(
            self, tracker_case: TrackerCase, name: str, results: list[TrialResult]) -> None:
        first = tracker_case.tracker(tracker_case.run_folder())
        study_id = first.start_study(name, tags=TAGS, params=PARAMS)
        joined = tracker_case.tracker(tracker_case.run_folder())
        joined.start_study(name, tags={}, params={}, parent_id=study_id)
        first.log_trial(results[0])
        joined.log_trial(results[1])
        first.log_trial(results[2])
        self.expect_trials(tracker_case, study_id, results)

    def test_catch_up_records_only_the_trials_the_store_lacks(
            self, tracker_case: TrackerCase, name: str, results: list[TrialResult]) -> None:
        folder = tracker_case.run_folder()
        tracker = tracker_case.tracker(folder)
        study_id = tracker.start_study(name, tags=TAGS, params=PARAMS)
        tracker.log_trial(results[0])
        # The run stopped between storing trials 1 and 2 and recording them; run again:
        rerun = tracker_case.tracker(folder)
        assert rerun.start_study(name, tags=TAGS, params=PARAMS, parent_id=study_id) == study_id
        rerun.catch_up(results)
        self.expect_trials(tracker_case, study_id, results)
        rerun.catch_up(results)
        self.expect_trials(tracker_case, study_id, results)

    def test_finish_study_records_its_metrics_files_and_texts_and_ends_it(
            self, tracker_case: TrackerCase, name: str, tmp_path: Path) -> None:
        tracker = tracker_case.tracker(tracker_case.run_folder())
        study_id = tracker.start_study(name, tags=TAGS, params=PARAMS)
        summary, plot = tmp_path / "summary.json", tmp_path / "plots" / "pareto.png"
        summary.write_text('{"verdict": "tuned"}\n')
        plot.parent.mkdir()
        plot.write_bytes(b"\x89PNG\r\n\x1a\n contract")
        metrics = {"best_cost_per_m_output_tokens": 0.25, "wall_s": 12.5}
        texts = {"best_config.yaml": "max_num_seqs: 64\n", "launch_command.sh": "#!/bin/sh\n"}
        tracker.finish_study(metrics, [("", summary), ("plots", plot)], texts)
        study = tracker_case.study(study_id)
        tracker_case.starts(study_id)  # a study without a re-measurement has no start
        if not tracker_case.records:
            assert study is None
            return
        assert study is not None
        assert study.ended
        assert metrics.items() <= study.metrics.items()
        assert study.files == {"summary.json": summary.read_bytes(),
                               "plots/pareto.png": plot.read_bytes(),
                               "best_config.yaml": b"max_num_seqs: 64\n",
                               "launch_command.sh": b"#!/bin/sh\n"}

    def test_each_fresh_start_of_the_remeasurement_is_recorded_once(
            self, tracker_case: TrackerCase, name: str, starts: list[MeasuredRun]) -> None:
        tracker = tracker_case.tracker(tracker_case.run_folder())
        study_id = tracker.start_study(name, tags=TAGS, params=PARAMS)
        tracker.finish_study({"wall_s": 1.0}, [], {}, starts=starts)
        self.expect_starts(tracker_case, study_id, starts)
        again = tracker_case.tracker(tracker_case.run_folder())  # the end written twice
        assert again.start_study(name, tags=TAGS, params=PARAMS, parent_id=study_id) == study_id
        again.finish_study({"wall_s": 1.0}, [], {}, starts=starts)
        self.expect_starts(tracker_case, study_id, starts)

    def test_nothing_is_written_into_the_working_directory(
            self, tracker_case: TrackerCase, name: str, results: list[TrialResult],
            tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        cwd = tmp_path / "cwd"
        cwd.mkdir()
        monkeypatch.chdir(cwd)
        tracker = tracker_case.tracker(tracker_case.run_folder())
        study_id = tracker.start_study(name, tags=TAGS, params=PARAMS)
        for result in results:
            tracker.log_trial(result)
        tracker.finish_study({"wall_s": 1.0}, [], {"best_config.yaml": "x: 1\n"})
        assert os.listdir(cwd) == []
        self.expect_trials(tracker_case, study_id, results)


class TrackerOutageContract(TrackerContract):
    """The contract, and what a tracker does while its store is down: for trackers whose
    store can be down (a tracking server; a local file or no store cannot be)."""

    def test_a_store_down_after_the_start_holds_nothing_up_and_loses_nothing(
            self, tracker_case: TrackerCase, name: str, results: list[TrialResult],
            starts: list[MeasuredRun]) -> None:
        outage = tracker_case.outage()
        folder = tracker_case.run_folder()
        tracker = tracker_case.tracker(folder)
        study_id = tracker.start_study(name, tags=TAGS, params=PARAMS)
        tracker.log_trial(results[0])
        with outage:
            tracker.log_trial(results[1])  # raises nothing: kept for later
            tracker.finish_study({"wall_s": 3.0}, [], {}, starts=starts)
        self.expect_trials(tracker_case, study_id, results[:1])
        self.expect_starts(tracker_case, study_id, [])
        # The same command run again, once the store answers, records what it missed:
        rerun = tracker_case.tracker(folder)
        assert rerun.start_study(name, tags=TAGS, params=PARAMS, parent_id=study_id) == study_id
        rerun.catch_up(results[:2])
        self.expect_trials(tracker_case, study_id, results[:2])
        study = tracker_case.study(study_id)
        assert study is not None
        assert study.ended
        assert study.metrics["wall_s"] == 3.0
        self.expect_starts(tracker_case, study_id, starts)
