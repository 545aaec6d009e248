"""Environment settings, apart from the run config.

Everything here comes from the environment (prefix ``TUNER_``) and never from a
workload file: where MLflow writes, which Docker daemon to use, the tokens an
engine needs. Secrets are ``SecretStr`` so they never print. The CLI builds one
:class:`Settings` and passes it down; nothing below it reads the environment for these.
The Hugging Face cache folders follow Hugging Face's own variables.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_HF_HOME = Path.home() / ".cache" / "huggingface"


class Settings(BaseSettings):
    """Process-wide settings read from ``TUNER_*`` environment variables."""

    model_config = SettingsConfigDict(env_prefix="TUNER_", extra="ignore")

    tracking_uri: str | None = Field(
        default=None, description="MLflow tracking URI; default: sqlite:///<out>/mlflow.db"
    )
    docker_host: str | None = Field(default=None, description="Docker daemon URL")
    hf_token: SecretStr | None = Field(default=None, description="passed to engines as HF_TOKEN")
    pin_cores: bool = Field(
        default=True, description="on CPU hosts, run the engine and the load generator on "
        "disjoint cores (TUNER_PIN_CORES=0: share them all)")
    engine_memory_gib: float | None = Field(
        default=None, gt=0, description="process engines: each engine's address space is "
        "limited to this (RLIMIT_AS), so a configuration that asks for more memory fails as an "
        "OOM in its own process, never pressing on the host; address space, not resident "
        "memory: give vLLM, whose address space far exceeds what it touches, a generous one")
    cache_dir: Path = Field(
        default=Path.home() / ".cache" / "tuner",
        description="compile and model caches shared by trials",
    )

    @property
    def models_dir(self) -> Path:
        """Where ``tune make-model`` writes and where models are looked up by name."""
        return self.cache_dir / "models"


def hf_home() -> Path:
    """The Hugging Face home folder (``$HF_HOME``, else ``~/.cache/huggingface``)."""
    return Path(os.environ.get("HF_HOME") or DEFAULT_HF_HOME)


def hf_cache_dirs() -> list[Path]:
    """Where hub downloads may be: $HF_HUB_CACHE, $HF_HOME/hub, then the default."""
    dirs = [Path(os.environ["HF_HUB_CACHE"])] if os.environ.get("HF_HUB_CACHE") else []
    for hub in (hf_home() / "hub", DEFAULT_HF_HOME / "hub"):
        if hub not in dirs:
            dirs.append(hub)
    return dirs


def without_password(url: str) -> str:
    """``url`` with the password of its user info removed (``postgresql://u:pw@h/db`` ->
    ``postgresql://u@h/db``): what the tuner writes or shows of a storage or tracking URL.
    Credentials stay where the user gave them."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))
