"""A password in a storage or tracking URL is used, never written or shown: what the tuner
keeps of such a URL (the study's record that workers read, messages) has none. The real study
with planted secrets, scanned everywhere it writes, is tests/integration/test_secrets.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.core import without_password
from tuner.study import StudyConfig, record_of

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("url", "kept"), [
    ("http://tuner:s3cret@mlflow:5000", "http://tuner@mlflow:5000"),
    ("https://:tok@mlflow.example/x", "https://mlflow.example/x"),
    ("postgresql+psycopg://tuner:pw@db:5432/tuner?sslmode=require",
     "postgresql+psycopg://tuner@db:5432/tuner?sslmode=require"),
    ("http://mlflow:5000", "http://mlflow:5000"),
    ("sqlite:////runs/s/mlflow.db", "sqlite:////runs/s/mlflow.db"),
])
def test_a_url_loses_its_password_only(url: str, kept: str) -> None:
    assert without_password(url) == kept


def test_the_study_s_record_holds_no_tracking_password(tmp_path: Path) -> None:
    cfg = StudyConfig(engine="vllm", workload=REPO / "experiments" / "workloads" / "smoke.yaml",
                      model="/m", out_dir=tmp_path,
                      storage="postgresql://tuner:db-s3cret@db/tuner",
                      tracking_uri="http://tuner:ml-s3cret@mlflow:5000")
    record = record_of(cfg, "run-1", now=0.0)
    assert record.tracking_uri == "http://tuner@mlflow:5000"
    assert "s3cret" not in record.model_dump_json()
