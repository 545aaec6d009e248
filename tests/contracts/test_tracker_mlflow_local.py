"""The tracker contract against the MLflow tracker on local stores: a SQLite file (the
tuner's default, ``sqlite:///<out>/mlflow.db``) and a ``file://`` folder.

MLflow 3 (3.17 here) refuses a ``file://`` store: its filesystem backend "is in maintenance
mode", and making a client on one raises MlflowException unless ``MLFLOW_ALLOW_FILE_STORE=true``
is set. The file-store case is skipped with MLflow's reason; it runs where that variable is set
(it passed so on MLflow 3.17.2) or on an MLflow that accepts the store again. A real MLflow
store's first use takes seconds (migrations make its tables): one store per module and kind, a
study of its own per test."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from tests.contracts.tracker import TrackerContract
from tests.contracts.tracker_mlflow import MlflowCase

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["sqlite", "file"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> tuple[str, Path | None]:
    """The store's URI, and the artifacts' folder the tuner gives it (None: its own)."""
    folder = tmp_path_factory.mktemp(f"mlflow-{request.param}")
    if request.param == "sqlite":
        uri, artifacts = f"sqlite:///{folder / 'mlflow.db'}", folder / "mlartifacts"
    else:
        uri, artifacts = (folder / "mlruns").as_uri(), None
    try:
        MlflowClient(tracking_uri=uri).search_experiments()  # made on first use
    except MlflowException as exc:
        pytest.skip(f"MLflow {mlflow.__version__} refuses a {request.param} store: "
                    f"{exc.message.split('. ')[0]} (MLFLOW_ALLOW_FILE_STORE=true runs it)")
    return uri, artifacts


@pytest.fixture
def tracker_case(store: tuple[str, Path | None], tmp_path: Path) -> MlflowCase:
    uri, artifacts = store
    return MlflowCase(tmp_path / "runs", uri, artifacts)


class TestMlflowTrackerOnLocalStores(TrackerContract):
    pass
