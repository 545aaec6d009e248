"""What a trial does with a running engine: wait until it serves, then measure it.

:class:`Measurer` is the seam between the study loop and the engine's HTTP API, so that every
outcome path of a trial is testable with a fake (see tests/unit/search). :class:`HttpMeasurer`
is the real one: readiness through the launcher's health, model list and one completion, then
the replay harness against the engine's OpenAI-compatible API, and greedy answers to fixed
prompts for the quality check of lossy knobs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tuner.core import EndpointError, EngineCrashed
from tuner.engines import EngineSpec
from tuner.launch import EngineHandle, unless_hung, wait_ready
from tuner.loadgen import NULL_PROGRESS, Progress, RequestRecord, run_loop
from tuner.measurement import Bench, CapacityResult, greedy_answers, open_bench
from tuner.metrics import GreedyAnswer
from tuner.workload import Workload, load_tokenizer


class Measurer(Protocol):
    """Contract: ``wait_ready`` returns the seconds it waited or raises EngineStartError;
    ``capacity`` (warm-up, then the capacity search) returns its figures with the
    per-request records, and raises EngineCrashed when the engine died, EndpointError when it
    does not serve the workload, nothing else on purpose; an unexpected error is the trial's
    outcome too. ``greedy`` returns the engine's greedy answers to the fixed prompts of the
    quality check (the same prompts, in the same order, on every call), or raises
    EndpointError; it runs on an engine that is ready, in a few seconds."""

    def wait_ready(self, handle: EngineHandle) -> float: ...

    def capacity(self, handle: EngineHandle, accelerators: int
                 ) -> tuple[CapacityResult, list[RequestRecord]]: ...

    def greedy(self, handle: EngineHandle, max_tokens: int) -> list[GreedyAnswer]: ...



@dataclass
class HttpMeasurer:
    """The real measurer: the engine's health and OpenAI-compatible API."""

    spec: EngineSpec
    workload: Workload
    served_name: str
    tokenizer: Path | None = None
    models_dir: Path | None = None
    startup_timeout_s: float | None = None
    progress: Progress = NULL_PROGRESS
    workers: int | None = None

    def wait_ready(self, handle: EngineHandle) -> float:
        self.progress.status("phase", "starting engine")
        return wait_ready(handle, self.spec, self.served_name, timeout_s=self.startup_timeout_s,
                          on_wait=lambda s: self.progress.status(
                              "phase", f"starting engine ({s:.0f}s)"))

    async def _bench(self, handle: EngineHandle, accelerators: int) -> Bench:
        # Requests name the model as the engine serves it (--served-name, or for an engine
        # that cannot name it, its path), not necessarily as the workload does.
        return await open_bench(self.workload.model_copy(update={"model": self.served_name}),
                                handle.base_url,
                                tokenizer=self.workload.tokenizer or self.tokenizer,
                                models_dir=self.models_dir, metrics_url=handle.metrics_url,
                                accelerators=accelerators,
                                force_lengths=self.spec.forces_output_length,
                                progress=self.progress, workers=self.workers)

    def capacity(self, handle: EngineHandle, accelerators: int
                 ) -> tuple[CapacityResult, list[RequestRecord]]:
        async def go() -> tuple[CapacityResult, list[RequestRecord]]:
            try:
                bench = await self._bench(handle, accelerators)
            except EndpointError:  # an engine gone since it was ready crashed; else bad input
                alive(handle)()
                raise
            try:
                found = await unless_hung(bench.capacity(before_step=alive(handle)), handle,
                                          self.spec.readiness.health_path,
                                          lambda: served_so_far(bench),
                                          self.workload.hang_timeout_s)
                return found, bench.records
            finally:
                bench.close()
        return run_loop(go())

    def greedy(self, handle: EngineHandle, max_tokens: int) -> list[GreedyAnswer]:
        self.progress.status("phase", "quality check: greedy answers")
        tokenizer = load_tokenizer(self.workload.model, self.workload.tokenizer or self.tokenizer,
                                   self.models_dir)
        return run_loop(greedy_answers(handle.base_url, self.served_name,
                                             self.workload.api, tokenizer,
                                             max_tokens=max_tokens,
                                             timeout_s=self.workload.request_timeout_s))


def served_so_far(bench: Bench) -> int:
    """What the engine has sent the bench so far: finished runs' records, and the tokens and
    answers of the run going on (moves while the engine serves anything)."""
    return len(bench.records) + sum(len(r.chunk_ns) + (r.done_ns is not None)
                                    for r in bench.runner.partial)


def alive(handle: EngineHandle) -> Callable[[], None]:
    """A check to run between steps: raises EngineCrashed once the engine has exited."""
    def check() -> None:
        code = handle.exit_code()
        if code is not None:
            raise EngineCrashed(f"engine exited with code {code}")
    return check
