"""A host and engine's start-to-start noise as ``tune measure`` measured it, kept in the cache
folder so that a later study on the same host and engine can start from it (saying so).

One file per engine, engine version and host (the host's description: CPU model, cores,
memory and core pinning, or its GPUs); the latest measurement replaces the one before.
"""

from __future__ import annotations

import hashlib
import logging
import re
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

from tuner.host import write_atomic
from tuner.metrics import PooledSpread

log = logging.getLogger(__name__)


class NoiseRecord(BaseModel):
    spread: PooledSpread
    engine: str
    engine_version: str
    host: str
    workload: str
    measured_at: str
    """ISO 8601, UTC."""
    start_s: float | None = None
    """The median wall time of one fresh start (launch, warm-up, capacity search, teardown);
    None in records written before it was kept."""

    def source(self) -> str:
        return (f"the start-to-start CV of {self.engine} {self.engine_version} on this host "
                f"recorded by tune measure on {self.measured_at[:10]} ({self.workload}), "
                f"{self.spread.text()}")


def noise_record_path(cache_dir: Path, engine: str, engine_version: str, host: str) -> Path:
    key = hashlib.sha256(host.encode()).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{engine}-{engine_version}")
    return cache_dir / "noise" / f"{name}-{key}.json"


def save_noise_record(cache_dir: Path, spread: PooledSpread, *, engine: str,
                      engine_version: str, host: str, workload: str,
                      start_s: float | None = None) -> Path:
    """Keep ``spread`` as this host and engine's noise (written whole, or not at all)."""
    record = NoiseRecord(spread=spread, engine=engine, engine_version=engine_version, host=host,
                         workload=workload, measured_at=datetime.now(UTC).isoformat(),
                         start_s=start_s)
    path = noise_record_path(cache_dir, engine, engine_version, host)
    write_atomic(path, record.model_dump_json(indent=2) + "\n")
    return path


def load_noise_record(cache_dir: Path, engine: str, engine_version: str, host: str
                      ) -> NoiseRecord | None:
    """The record of this host and engine; None when there is none (or it cannot be read,
    which is logged: the study then goes on without it)."""
    path = noise_record_path(cache_dir, engine, engine_version, host)
    try:
        return NoiseRecord.model_validate_json(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError) as exc:
        log.warning("%s: cannot read this host's noise record (%s); going on without it",
                    path, type(exc).__name__)
        return None
