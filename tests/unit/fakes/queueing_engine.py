"""A simulated engine with a known capacity, for calibrating the capacity statistics.

It runs in-process and in simulated time. Each fresh start has its own service rate ``mu``:
the configuration's ``service_rate`` times exp(N(0, start_cv)) (engine restarts differ). A step
at ``load`` req/s sends Poisson arrivals for ``step_s`` seconds (at least ``min_requests``);
each request's time to first token is its prefill plus the waiting time of an M/M/1 queue at
utilisation rho = load / mu (0 with probability 1 - rho, else exponential with rate mu - load),
whose p95 has a closed form, so the true capacity under a TTFT bound is known exactly. Its
inter-token gaps are ``itl_ms`` x (1 + itl_growth x rho^2) x a log-normal (sigma ``itl_sigma``),
whose p95 is known too. At rho >= 1 the queue grows without end: the step is cut early, as the
SLO guard cuts a hopeless load (censored).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tuner.loadgen import RequestRecord
from tuner.metrics import StepSample

MS = 1_000_000
Z95 = 1.6448536269514722


@dataclass(frozen=True)
class QueueingEngine:
    """A configuration of the simulated engine."""

    service_rate: float = 20.0
    """Requests per second one start serves at full utilisation (before start-to-start noise)."""
    start_cv: float = 0.05
    prefill_ms: float = 40.0
    itl_ms: float = 10.0
    itl_growth: float = 0.5
    itl_sigma: float = 0.2
    output_tokens: int = 16

    def start(self, rng: np.random.Generator) -> SimulatedStart:
        """A fresh start: its own service rate."""
        mu = self.service_rate * math.exp(rng.normal(0.0, self.start_cv))
        return SimulatedStart(self, mu)


@dataclass(frozen=True)
class SimulatedStart:
    engine: QueueingEngine
    mu: float

    def ttft_p95_ms(self, load: float) -> float:
        """The true p95 TTFT at ``load``: prefill + the M/M/1 wait's p95."""
        rho = load / self.mu
        if rho >= 1:
            return math.inf
        wait_s = 0.0 if rho <= 0.05 else math.log(rho / 0.05) / (self.mu - load)
        return self.engine.prefill_ms + 1000 * wait_s

    def itl_p95_ms(self, load: float) -> float:
        e = self.engine
        return e.itl_ms * (1 + e.itl_growth * (load / self.mu) ** 2) * math.exp(Z95 * e.itl_sigma)

    def capacity(self, ttft_bound_ms: float, itl_bound_ms: float = math.inf) -> float:
        """The true capacity: the highest load whose p95 TTFT and p95 ITL are within bounds."""
        lo, hi = 0.0, self.mu
        for _ in range(100):
            mid = (lo + hi) / 2
            if self.ttft_p95_ms(mid) <= ttft_bound_ms and self.itl_p95_ms(mid) <= itl_bound_ms:
                lo = mid
            else:
                hi = mid
        return lo

    def step(self, load: float, rng: np.random.Generator, *, step_s: float = 10.0,
             min_requests: int = 60, index: int = 0) -> StepSample:
        """One step's requests at ``load`` (cut after 15 when the queue cannot keep up)."""
        e = self.engine
        rho = load / self.mu
        n = max(min_requests, round(load * step_s))
        cut = rho >= 1
        if cut:
            n = 15
        sends = np.cumsum(rng.exponential(1 / load, size=n))
        waiting = rng.random(n) < min(rho, 1.0)
        rate = max(self.mu - load, 1e-9)
        waits = np.minimum(np.where(waiting, rng.exponential(1 / rate, size=n), 0.0), 600.0)
        if cut:
            waits = waits + 10.0  # far past any bound: the guard's reason to stop
        ttft = e.prefill_ms / 1000 + waits
        scale = e.itl_ms / 1000 * (1 + e.itl_growth * min(rho, 1.0) ** 2)
        gaps = scale * rng.lognormal(0.0, e.itl_sigma, size=(n, e.output_tokens - 1))
        records = []
        for i in range(n):
            sent = int(sends[i] * 1e9)
            first = sent + int(ttft[i] * 1e9)
            chunks = [first, *(first + np.cumsum(gaps[i] * 1e9).astype(np.int64)).tolist()]
            records.append(RequestRecord(
                index=i, class_name="c", prefix_group=None, input_tokens=32,
                planned_output_tokens=e.output_tokens, scheduled_ns=sent, sent_ns=sent,
                first_token_ns=first, done_ns=chunks[-1], chunk_ns=chunks,
                chunk_tokens=[1] * e.output_tokens, prompt_tokens=32,
                output_tokens=e.output_tokens, status=200, step=index))
        return StepSample(load, records, censored=cut)
