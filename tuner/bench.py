"""The replay harness as a library: probe an endpoint, run a workload once or search its
capacity, and write the figures and per-request records."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel

from tuner import __version__
from tuner.loadgen.client import ServerCaps
from tuner.loadgen.probe import normalise_endpoint, probe_endpoint
from tuner.loadgen.records import RequestRecord, write_records_csv
from tuner.loadgen.runner import Runner
from tuner.metrics.summary import RunSummary, summarise
from tuner.progress import NULL_PROGRESS, Progress
from tuner.search.capacity import CapacityResult, find_capacity
from tuner.workload.arrivals import ConcurrencyArrivals
from tuner.workload.models import Workload
from tuner.workload.plan import RequestFactory
from tuner.workload.prompts import PromptSynth
from tuner.workload.tokenizer import load_tokenizer


class BenchReport(BaseModel):
    """Everything ``tune bench`` measured, machine-readable."""

    tool_version: str
    started_at: str
    endpoint: str
    workload: str
    workload_sha256: str | None
    mode: Literal["single", "capacity"]
    output_lengths: str
    result: RunSummary | None
    capacity: CapacityResult | None = None


@dataclass
class Bench:
    """A workload bound to one endpoint, ready to run (probe done, prompts ready)."""

    workload: Workload
    url: str
    caps: ServerCaps
    runner: Runner
    accelerators: int = 1
    records: list[RequestRecord] = field(default_factory=list)

    async def once(self, load: float | None = None, *, epoch: int = 0,
                   duration_s: float | None = None, early_stop: bool = True) -> RunSummary:
        outcome = await self.runner.run(load, epoch=epoch, duration_s=duration_s,
                                        early_stop=early_stop)
        self.records.extend(outcome.records)
        return summarise(outcome, self.workload, self.caps, self.accelerators)

    async def capacity(self, *, first_epoch: int = 0,
                       before_step: Callable[[], None] | None = None) -> CapacityResult:
        """Capacity search; ``before_step`` may raise to abort it (a dead engine)."""
        w = self.workload
        cfg = w.capacity
        start = cfg.start or w.arrival.load
        duration = cfg.step_duration_s

        async def step(load: float, epoch: int) -> RunSummary:
            if before_step is not None:
                before_step()
            self.runner.progress.status("phase", f"measuring at load {load:.3g}")
            return await self.once(load, epoch=first_epoch + epoch, duration_s=duration)

        return await find_capacity(step, start, cfg,
                                   integer=isinstance(w.arrival, ConcurrencyArrivals))


async def open_bench(workload: Workload, endpoint: str, *, tokenizer: Path | None = None,
                     metrics_url: str | None = None, accelerators: int = 1,
                     force_lengths: bool = True, progress: Progress = NULL_PROGRESS) -> Bench:
    """Load the tokenizer, probe the endpoint and return a ready :class:`Bench`."""
    url = normalise_endpoint(endpoint)
    synth = PromptSynth(load_tokenizer(workload.model, tokenizer or workload.tokenizer))
    specials = workload.api == "completions"
    probe_prompt = synth.prompt(np.random.default_rng(0), 8, specials=specials)
    caps = await probe_endpoint(url, workload.model, workload.api, probe_prompt, 8,
                                force_lengths=force_lengths)
    factory = RequestFactory(workload, synth)
    runner = Runner(url, workload, factory, caps,
                    metrics_url=metrics_url or f"{url}/metrics", progress=progress)
    return Bench(workload, url, caps, runner, accelerators)


def file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def make_report(bench: Bench, workload_path: Path, *, single: RunSummary | None = None,
                capacity: CapacityResult | None = None) -> BenchReport:
    return BenchReport(
        tool_version=__version__,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        endpoint=bench.url,
        workload=str(workload_path),
        workload_sha256=file_sha256(workload_path),
        mode="capacity" if capacity is not None else "single",
        output_lengths=("forced with max_tokens, min_tokens and ignore_eos"
                        if bench.caps.forces_output_length else
                        "not forced (server refused min_tokens/ignore_eos); figures use the "
                        "real counts from usage"),
        result=capacity.best if capacity is not None else single,
        capacity=capacity,
    )


def write_report(report: BenchReport, records: list[RequestRecord], path: Path) -> Path:
    """Write ``path`` (JSON) and the per-request records next to it; return the records path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
    records_path = path.with_name(path.stem + ".records.csv")
    write_records_csv(records, records_path)
    return records_path
