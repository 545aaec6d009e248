"""How MLflow's UI shows a study: an experiment of the model-training kind, and a saved view
of its runs table that lists the trials, cheapest first, with the columns a study is reviewed
by.

What MLflow 3 (3.17) reads, from its UI's source: the experiment tag ``mlflow.experimentKind``
(``custom_model_development`` is model training; the UI's own switch between GenAI and
machine learning, stored in the browser or given as ``?workflowType=machine_learning``,
overrides it, and with the GenAI setting, its default, an experiment opens on an empty traces
overview). The runs table's columns and order are the browser's own state (by default:
source, models, dataset); the one way to give them from outside is a saved view, an
experiment tag ``mlflow.sharedViewState.<key>`` holding ``{"name", "createdAt",
"updatedAt", "state"}`` (``state``: the table's filter, order and selected columns as
JSON), which the UI lists among the experiment's views and opens from
``#/experiments/<id>/runs?viewStateShareKey=<key>``. Trials are nested runs under the
study's run, collapsed there; the view's filter on trial runs leaves their parent out, so
the table lists them flat.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tuner.metric_registry import ITL_P95, TTFT_P95

KIND_TAG = "mlflow.experimentKind"
MODEL_TRAINING = "custom_model_development"
VIEW_KEY = "tuner-trials"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
VIEW_NAME = "tuner: trials, cheapest first"

COLUMNS = (("metrics", "cost_per_m_output_tokens"), ("metrics", "max_load"),
           ("metrics", TTFT_P95.key), ("metrics", ITL_P95.key), ("tags", "tuner.outcome"),
           ("metrics", "quality.token_agreement"))
"""The runs table's columns in the study's view: cost at the sustainable load, that load,
p95 TTFT and ITL there, the trial's outcome and, for lossy configurations, the quality check."""


def column(kind: str, key: str) -> str:
    """A runs-table column as the UI names it (``metrics.`max_load```)."""
    return f"{kind}.`{key}`"


def view_state() -> dict[str, Any]:
    """The runs table of the study's view: trial runs only, cheapest first."""
    return {"searchFilter": "tags.`tuner.role` = 'trial'",
            "orderByKey": column("metrics", "cost_per_m_output_tokens"), "orderByAsc": True,
            "selectedColumns": [column(kind, key) for kind, key in COLUMNS]}


def experiment_tags(now_ms: int | None = None) -> dict[str, str]:
    """The tags that make a study's experiment open as model training, on its trials."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    view = {"name": VIEW_NAME, "createdAt": now, "updatedAt": now,
            "state": json.dumps(view_state())}
    return {KIND_TAG: MODEL_TRAINING, VIEW_TAG: json.dumps(view)}


def runs_page(experiment_id: str) -> str:
    """Where the UI shows the study's trials (after the UI's address)."""
    return (f"#/experiments/{experiment_id}/runs?viewStateShareKey={VIEW_KEY}"
            "&workflowType=machine_learning")


def review_line(tracking_uri: str, page: str) -> str:
    """Where to see the study's trials: the tracking server's page, or how to serve a local
    store and the page to open."""
    if tracking_uri.startswith(("http://", "https://")):
        return f"trials in MLflow: {tracking_uri.rstrip('/')}/{page}"
    return (f"trials in MLflow: mlflow ui --backend-store-uri {tracking_uri}, then open "
            f"http://127.0.0.1:5000/{page}")
