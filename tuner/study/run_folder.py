"""A study's folder (``tune-runs/<study>/``): the one owner of every path under it.

What a study writes there, for the user and for resume (the code that writes a file never reads
it back to go on; it reads it only to resume, to report or to export):

- ``config.json``: the run config, without passwords;
- ``host.json``: this host's side (hardware, the served model name, the engine image);
- ``study.db`` and ``mlflow.db``: the study's storage and tracking store, unless URLs are given;
  ``mlartifacts/`` beside a local tracking store;
- ``trials/trial-NNN.json``: this host's trials in full;
- ``logs/<tag>.log``: each engine start's log; ``records/<tag>.csv``: its per-request records
  (tags: ``trial-NNN``, ``trial-NNN-again``, ``remeasure-NNN-R``; ``tune measure``'s
  ``measure-NNN``);
- ``quality/``: the defaults' greedy answers for the quality check;
- ``shared/``: a worker's copies of the study's workload and search space;
- ``tracking-pending/``: what the tracking server has not taken yet (the outbox, which names
  its own files inside);
- ``summary.json``, ``plots/<name>.png``: the study's end; ``measure.json``: ``tune measure``'s;
  ``trials.csv``: ``tune report``'s table of the trials.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tuner.study.outcome import TrialResult

CONFIG = "config.json"
HOST = "host.json"
SUMMARY = "summary.json"


def trial_tag(number: int) -> str:
    """The tag of a trial's engine start: its log's and records' name (``trial-007``)."""
    return f"trial-{number:03d}"


def again_tag(number: int) -> str:
    """The tag of a trial's second start (intensification)."""
    return f"{trial_tag(number)}-again"


def remeasure_tag(number: int, repeat: int) -> str:
    """The tag of a re-measurement's fresh start of trial ``number``."""
    return f"remeasure-{number:03d}-{repeat}"


def measure_tag(repeat: int) -> str:
    """The tag of ``tune measure``'s fresh start number ``repeat`` (``measure-000``)."""
    return f"measure-{repeat:03d}"


@dataclass(frozen=True)
class RunFolder:
    """The paths under one study's folder; nothing is created until a writer asks for it."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / CONFIG

    @property
    def host(self) -> Path:
        return self.root / HOST

    @property
    def summary(self) -> Path:
        return self.root / SUMMARY

    @property
    def measure(self) -> Path:
        return self.root / "measure.json"

    @property
    def trials_csv(self) -> Path:
        """Every trial of this host as a row (``tune report`` writes it)."""
        return self.root / "trials.csv"

    @property
    def study_db(self) -> Path:
        return self.root / "study.db"

    @property
    def mlflow_db(self) -> Path:
        return self.root / "mlflow.db"

    @property
    def trials(self) -> Path:
        return self.root / "trials"

    def trial(self, number: int) -> Path:
        """This host's full result of trial ``number``."""
        return self.trials / f"{trial_tag(number)}.json"

    def trial_files(self) -> Iterator[Path]:
        """This host's trials' results, in trial order."""
        return iter(sorted(self.trials.glob("trial-*.json")))

    def load_trials(self) -> list[TrialResult]:
        """This host's trials, read back (to resume, report or export: never by the study
        that is writing them)."""
        return [TrialResult.model_validate_json(p.read_text()) for p in self.trial_files()]

    def log(self, tag: str) -> Path:
        return self.root / "logs" / f"{tag}.log"

    def records(self, tag: str) -> Path:
        return self.root / "records" / f"{tag}.csv"

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    def plot(self, name: str) -> Path:
        return self.plots / f"{name}.png"

    @property
    def quality(self) -> Path:
        return self.root / "quality"

    @property
    def shared(self) -> Path:
        """A worker's copies of the study's workload and search space (from its record)."""
        return self.root / "shared"

    def shared_workload(self, name: str) -> Path:
        return self.shared / f"{name}.yaml"

    @property
    def shared_space(self) -> Path:
        return self.shared / "search_space.yaml"

    @property
    def outbox(self) -> Path:
        return self.root / "tracking-pending"


@dataclass(frozen=True)
class OutboxFiles:
    """The files of a study's outbox (``tracking-pending/``): where its records go, each
    trial's record, the study's end."""

    root: Path

    @property
    def target(self) -> Path:
        return self.root / "target.json"

    @property
    def end(self) -> Path:
        return self.root / "study-end.json"

    def trial(self, number: int) -> Path:
        return self.root / f"{trial_tag(number)}.json"

    def trials(self) -> list[Path]:
        return sorted(self.root.glob("trial-*.json"))
