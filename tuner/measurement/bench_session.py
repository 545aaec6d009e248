"""The replay harness as a library: probe an endpoint, run a workload once or search its
capacity, and write the figures and per-request records."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tuner.loadgen import (
    DIRECT,
    NULL_PROGRESS,
    Progress,
    RequestRecord,
    Route,
    Runner,
    ServerCaps,
    StopCheck,
    check_serves,
    normalise_endpoint,
    probe_endpoint,
    wait_idle,
)
from tuner.measurement.capacity import CapacityResult, capacity_of
from tuner.measurement.curve_search import Probe, SearchBudget, highest_reach, search_capacity
from tuner.measurement.early_stop import SloGuard
from tuner.measurement.step_line import step_line
from tuner.measurement.warmup import RAMP_EPOCHS, WARMUP_EPOCH, WarmupResult, ramp, warm_up
from tuner.metric_registry import ERROR_RATE, TTFT_P95
from tuner.metrics import KEEP_UP_CHECKS, RunSummary, StepSample, measured, summarise
from tuner.workload import (
    ConcurrencyArrivals,
    PromptSynth,
    RequestFactory,
    Workload,
    load_tokenizer,
)


@dataclass
class Bench:
    """A workload bound to one endpoint, ready to run (probe done, prompts ready)."""

    workload: Workload
    url: str
    caps: ServerCaps
    runner: Runner
    accelerators: int = 1
    records: list[RequestRecord] = field(default_factory=list)
    summaries: list[RunSummary] = field(default_factory=list)
    """Every kept run's figures, in order (what an interrupted command still has)."""
    epoch: int = 0
    """The first epoch of this bench's prompts: every run's epoch is counted from it, so two
    benches with different ones never send the same prompt (``tune bench`` draws it)."""

    def close(self) -> None:
        """End the client's worker processes (if the runs used several)."""
        self.runner.close()

    def load_label(self, load: float | None = None) -> str:
        """``load 4 req/s``: a load with its unit."""
        value = self.workload.arrival.load if load is None else load
        return f"load {value:.3g} {self.workload.load_unit}"

    async def once(self, load: float | None = None, *, epoch: int = 0,
                   duration_s: float | None = None, stop_check: StopCheck | None = None,
                   keep: bool = True, label: str | None = None) -> RunSummary:
        """One run with the prompts of ``epoch`` (counted from the bench's own); its records are
        kept in ``records`` unless ``keep`` is False (warm-up). ``label`` names it in progress
        (default: its load); its outcome is logged as a line."""
        summary, _ = await self.run(load, epoch=epoch, duration_s=duration_s,
                                    stop_check=stop_check, keep=keep, label=label)
        return summary

    async def run(self, load: float | None = None, *, epoch: int = 0,
                  duration_s: float | None = None, stop_check: StopCheck | None = None,
                  keep: bool = True, label: str | None = None
                  ) -> tuple[RunSummary, list[RequestRecord]]:
        """:meth:`once`, with the run's measured records (what its figures are made of)."""
        label = label or self.load_label(load)
        outcome = await self.runner.run(load, epoch=self.epoch + epoch, duration_s=duration_s,
                                        stop_check=stop_check, label=label)
        if keep:
            self.records.extend(outcome.records)
        summary = summarise(outcome, self.workload, self.caps, self.accelerators)
        if keep:
            self.summaries.append(summary)
        self.runner.progress.log(step_line(label, summary))
        return summary, measured(outcome.records)

    def step_duration(self, load: float) -> float | None:
        """How long a step at ``load`` lasts: the workload's step duration, or (open loop)
        long enough to send ``min_requests`` measured requests, at most ``max_step_s``."""
        cfg = self.workload.capacity
        least = cfg.step_duration_s or self.workload.stop.duration_s
        if isinstance(self.workload.arrival, ConcurrencyArrivals):
            return least
        needed = cfg.min_requests / load
        return min(cfg.max_step_s, max(least or 0.0, needed))

    def guard(self, load: float) -> SloGuard:
        w = self.workload
        return SloGuard(ttft_bound_ns=int(w.slo.required(TTFT_P95) * 1e6),
                        max_error_rate=w.slo.required(ERROR_RATE),
                        offered_rps=None if isinstance(w.arrival, ConcurrencyArrivals)
                        else load)

    async def warm_up(self, load: float, ceiling: float | None = None) -> WarmupResult:
        """Ramp the engine up from ``load`` once (to ``ceiling`` at most), then warm it at
        ``load`` until its latencies settle (see measurement.warmup); the ramp counts in the
        warm-up's time."""
        cfg = self.workload.warmup.engine
        rounds = cfg.round_requests
        t0 = time.monotonic()

        async def ramp_round(at: float, i: int) -> RunSummary:
            await wait_idle(self.runner.metrics_url)
            self.runner.progress.status("phase", f"ramping the engine up (round {i + 1})")
            return await self.once(at, epoch=WARMUP_EPOCH + RAMP_EPOCHS + i,
                                   duration_s=cfg.ramp_s, stop_check=self.guard(at),
                                   keep=False, label=f"engine ramp round {i + 1}, "
                                   f"{self.load_label(at)}")
        ramped = await ramp(ramp_round, load, cfg,
                            integer=isinstance(self.workload.arrival, ConcurrencyArrivals),
                            ceiling=ceiling)
        if ramped:
            await wait_idle(self.runner.metrics_url)

        async def run_round(i: int) -> RunSummary:
            self.runner.progress.status("phase", f"warming up the engine (round {i + 1})")
            if isinstance(self.workload.arrival, ConcurrencyArrivals):
                duration = max(1.0, rounds / max(1.0, load))
            else:
                duration = rounds / load
            return await self.once(load, epoch=WARMUP_EPOCH + i, duration_s=duration,
                                   keep=False, label=f"engine warm-up round {i + 1}, "
                                   f"{self.load_label(load)}")
        warmed = await warm_up(run_round, cfg)
        return warmed.model_copy(update={"ramp": ramped, "seconds": time.monotonic() - t0})

    async def capacity(self, *, first_epoch: int = 0,
                       before_step: Callable[[], None] | None = None) -> CapacityResult:
        """Warm-up, then the capacity search; ``before_step`` may raise to abort it (a dead
        engine)."""
        w = self.workload
        cfg = w.capacity
        start = cfg.start or w.arrival.load
        integer = isinstance(w.arrival, ConcurrencyArrivals)
        budget = SearchBudget(resolution=cfg.search_resolution(), max_steps=cfg.max_steps,
                              max_time_s=cfg.max_time_s, min_load=cfg.min_load,
                              max_load=cfg.max_load)
        warmed = None
        if w.warmup.engine.enabled:
            first = float(max(1, round(start))) if integer else start
            warmed = await self.warm_up(first, ceiling=highest_reach(first, budget))

        steps: list[RunSummary] = []

        async def step(load: float, index: int) -> Probe:
            if before_step is not None:
                before_step()
            await wait_idle(self.runner.metrics_url)  # what the last step left must not count
            label = f"step {index + 1}, {self.load_label(load)}"
            self.runner.progress.status("phase", f"measuring {label}")
            summary, records = await self.run(load, epoch=first_epoch + index,
                                              duration_s=self.step_duration(load),
                                              stop_check=self.guard(load), label=label)
            steps.append(summary)
            return probe_of(summary, records)

        found = await search_capacity(step, start, w.slo.bounds(), budget, integer=integer)
        return capacity_of(steps, found).model_copy(update={"warmup": warmed})


def probe_of(summary: RunSummary, records: list[RequestRecord]) -> Probe:
    """A step as the search sees it: its requests; censored when the guard cut it or the
    engine fell behind the offered load (above the bounds, by how much unknown); the client's
    saturation when it failed with the load generator saturated."""
    failed = set(summary.slo.failed())
    censored = summary.stopped_early is not None or bool(failed & KEEP_UP_CHECKS)
    saturated = not summary.slo.passed and summary.client_saturated is not None
    return Probe(StepSample(summary.load, records, censored=censored),
                 client_saturated=saturated, unmeasured=summary.not_measured is not None)


async def open_bench(workload: Workload, endpoint: str, *, tokenizer: Path | None = None,
                     models_dir: Path | None = None, metrics_url: str | None = None,
                     accelerators: int = 1, force_lengths: bool = True,
                     progress: Progress = NULL_PROGRESS, workers: int | None = None,
                     epoch: int = 0, route: Route = DIRECT) -> Bench:
    """Load the tokenizer, probe the endpoint and return a ready :class:`Bench` (close it).
    ``models_dir`` is where models made by ``tune make-model`` are found by name; ``workers``
    the client processes of open-loop runs (None: as the planned token rate needs); ``epoch``
    the first epoch of its prompts; ``route`` the load's transport and proxy."""
    url = normalise_endpoint(endpoint)
    await check_serves(url, workload.model)  # a misspelt model is not a missing tokenizer
    synth = PromptSynth(load_tokenizer(workload.model, tokenizer or workload.tokenizer,
                                       models_dir))
    specials = workload.api == "completions"
    probe_prompt = synth.prompt(np.random.default_rng(0), 8, specials=specials)
    caps = await probe_endpoint(url, workload.model, workload.api, probe_prompt, 8,
                                force_lengths=force_lengths)
    factory = RequestFactory(workload, synth)
    runner = Runner(url, workload, factory, caps,
                    metrics_url=metrics_url or f"{url}/metrics", progress=progress,
                    workers=workers, route=route)
    return Bench(workload, url, caps, runner, accelerators, epoch=epoch)
