"""Environment settings, apart from the run config.

Everything here comes from the environment (prefix ``TUNER_``) and never from a
workload file: where MLflow writes, which Docker daemon to use, the tokens an
engine needs. Secrets are ``SecretStr`` so they never print.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Process-wide settings read from ``TUNER_*`` environment variables."""

    model_config = SettingsConfigDict(env_prefix="TUNER_", extra="ignore")

    tracking_uri: str | None = Field(
        default=None, description="MLflow tracking URI; default: sqlite:///<out>/mlflow.db"
    )
    docker_host: str | None = Field(default=None, description="Docker daemon URL")
    hf_token: SecretStr | None = Field(default=None, description="passed to engines as HF_TOKEN")
    cache_dir: Path = Field(
        default=Path.home() / ".cache" / "tuner",
        description="compile and model caches shared by trials",
    )
