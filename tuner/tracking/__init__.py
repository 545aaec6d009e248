"""The face of tuner.tracking: what other packages use of it; the rest is private."""

from tuner.tracking.delivery import FINISHED_STATES
from tuner.tracking.mlflow_tracker import ENGINE_DECIDES, MlflowTracker, deliver_kept
from tuner.tracking.outbox import Outbox
from tuner.tracking.runs_view import KIND_TAG, MODEL_TRAINING, VIEW_TAG, review_line, runs_page
from tuner.tracking.study_run import StudyRun, read_study_run

__all__ = [
    "ENGINE_DECIDES", "FINISHED_STATES", "KIND_TAG", "MODEL_TRAINING", "MlflowTracker", "Outbox",
    "StudyRun", "VIEW_TAG", "deliver_kept", "read_study_run", "review_line", "runs_page",
]
