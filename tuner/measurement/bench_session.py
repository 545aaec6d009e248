"""The replay harness as a library: probe an endpoint, run a workload once or search its
capacity, and write the figures and per-request records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tuner.loadgen.client import ServerCaps
from tuner.loadgen.probe import normalise_endpoint, probe_endpoint
from tuner.loadgen.progress import NULL_PROGRESS, Progress
from tuner.loadgen.records import RequestRecord
from tuner.loadgen.runner import Runner
from tuner.measurement.capacity import CapacityResult, find_capacity
from tuner.metrics.run_summary import RunSummary, summarise
from tuner.workload.arrivals import ConcurrencyArrivals
from tuner.workload.models import Workload
from tuner.workload.plan import RequestFactory
from tuner.workload.prompts import PromptSynth
from tuner.workload.tokenizer import load_tokenizer


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
                   duration_s: float | None = None, early_stop: bool = False) -> RunSummary:
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
            return await self.once(load, epoch=first_epoch + epoch, duration_s=duration,
                                   early_stop=True)

        return await find_capacity(step, start, cfg,
                                   integer=isinstance(w.arrival, ConcurrencyArrivals))


async def open_bench(workload: Workload, endpoint: str, *, tokenizer: Path | None = None,
                     models_dir: Path | None = None, metrics_url: str | None = None,
                     accelerators: int = 1, force_lengths: bool = True,
                     progress: Progress = NULL_PROGRESS) -> Bench:
    """Load the tokenizer, probe the endpoint and return a ready :class:`Bench`.
    ``models_dir`` is where models made by ``tune make-model`` are found by name."""
    url = normalise_endpoint(endpoint)
    synth = PromptSynth(load_tokenizer(workload.model, tokenizer or workload.tokenizer,
                                       models_dir))
    specials = workload.api == "completions"
    probe_prompt = synth.prompt(np.random.default_rng(0), 8, specials=specials)
    caps = await probe_endpoint(url, workload.model, workload.api, probe_prompt, 8,
                                force_lengths=force_lengths)
    factory = RequestFactory(workload, synth)
    runner = Runner(url, workload, factory, caps,
                    metrics_url=metrics_url or f"{url}/metrics", progress=progress)
    return Bench(workload, url, caps, runner, accelerators)
