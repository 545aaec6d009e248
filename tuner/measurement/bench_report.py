"""What ``tune bench`` writes: every figure as JSON, and the per-request records beside it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from tuner import __version__
from tuner.loadgen import RequestRecord, redact, write_records_csv
from tuner.measurement.bench_session import Bench
from tuner.measurement.capacity import CapacityResult
from tuner.metrics import RunSummary
from tuner.workload import workload_sha256


class BenchReport(BaseModel):
    """Everything ``tune bench`` measured, machine-readable."""

    tool_version: str
    started_at: str
    endpoint: str
    transport: str = "raw"
    """The httpx transport the load went through (``--transport``)."""
    proxy: str | None = None
    """The proxy it went through (from the environment; password left out), or None."""
    workload: str
    workload_sha256: str | None
    seed: int = 0
    """The workload's seed the run used (``--seed`` overrides the file's)."""
    epoch: int = 0
    """The first epoch of the prompts: ``--seed S --epoch E`` sends the same requests again."""
    mode: Literal["single", "capacity"]
    output_lengths: str
    result: RunSummary | None
    capacity: CapacityResult | None = None
    interrupted: bool = False
    """Ctrl-C or SIGTERM ended the command: ``runs`` holds the runs it finished."""
    runs: list[RunSummary] = []


def make_report(bench: Bench, workload_path: Path, *, single: RunSummary | None = None,
                capacity: CapacityResult | None = None, interrupted: bool = False
                ) -> BenchReport:
    return BenchReport(
        tool_version=__version__,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        endpoint=bench.url,
        transport=bench.runner.route.transport,
        proxy=redact(bench.runner.route.proxy) if bench.runner.route.proxy else None,
        workload=str(workload_path),
        workload_sha256=workload_sha256(workload_path),
        seed=bench.workload.seed,
        epoch=bench.epoch,
        mode="capacity" if capacity is not None else "single",
        output_lengths=("forced with max_tokens, min_tokens and ignore_eos"
                        if bench.caps.forces_output_length else
                        "not forced (server refused min_tokens/ignore_eos); figures use the "
                        "real counts from usage"),
        result=capacity.best if capacity is not None else single,
        capacity=capacity,
        interrupted=interrupted,
        runs=bench.summaries if interrupted else [],
    )


def write_report(report: BenchReport, records: list[RequestRecord], path: Path) -> Path:
    """Write ``path`` (JSON) and the per-request records next to it; return the records path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
    records_path = path.with_name(path.stem + ".records.csv")
    write_records_csv(records, records_path)
    return records_path
