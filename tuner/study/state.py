"""What one process knows of its study's trials: the finished ones (every worker's) and its
own, and where this host keeps its own trials' full results (``trials/trial-NNN.json``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import optuna
from optuna.trial import TrialState

from tuner.study.config import StudyConfig
from tuner.study.coordination import stored_result
from tuner.study.outcome import TrialResult, ranked


@dataclass
class StudyProgress:
    results: list[TrialResult] = field(default_factory=list)
    """The study's finished trials (every worker's, once the search returns)."""
    own: list[TrialResult] = field(default_factory=list)
    """The trials this process ran."""
    tuner_start: float = field(default_factory=time.monotonic)

    @property
    def feasible(self) -> list[TrialResult]:
        return ranked(self.results)


def load_results(cfg: StudyConfig, study: optuna.Study) -> list[TrialResult]:
    """Results of the study's finished trials, every worker's: this host's own in full (its
    ``trials/`` folder), the others' as the storage keeps them."""
    out = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        path = cfg.folder.trial(t.number)
        if path.is_file():
            out.append(TrialResult.model_validate_json(path.read_text()))
        elif (stored := stored_result(t)) is not None:
            out.append(stored)
    return out
