"""The tracker contract against the MLflow tracker on local stores: a SQLite file (the
tuner's default, ``sqlite:///<out>/mlflow.db``) and a ``file://`` folder.

MLflow 3 (3.17 here) serves a ``file://`` store only with ``MLFLOW_ALLOW_FILE_STORE=true`` (its
filesystem backend "is in maintenance mode"): the file-store case runs with it set. A real MLflow
store's first use takes seconds (migrations make its tables): one store per module and kind, a
study of its own per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.contracts.tracker import TrackerContract
from tests.contracts.tracker_mlflow import MlflowCase

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["sqlite", "file"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[str, Path | None]]:
    """The store's URI, and the artifacts' folder the tuner gives it (None: its own). MLflow
    3.17 serves a ``file://`` store only with MLFLOW_ALLOW_FILE_STORE=true, as its users run it."""
    folder = tmp_path_factory.mktemp(f"mlflow-{request.param}")
    with pytest.MonkeyPatch.context() as env:
        if request.param == "sqlite":
            uri, artifacts = f"sqlite:///{folder / 'mlflow.db'}", folder / "mlartifacts"
        else:
            env.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
            uri, artifacts = (folder / "mlruns").as_uri(), None
        MlflowClient(tracking_uri=uri).search_experiments()  # made on first use
        yield uri, artifacts


@pytest.fixture
def tracker_case(store: tuple[str, Path | None], tmp_path: Path) -> MlflowCase:
    uri, artifacts = store
    return MlflowCase(tmp_path / "runs", uri, artifacts)


class TestMlflowTrackerOnLocalStores(TrackerContract):
    pass
