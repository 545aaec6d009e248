"""Arrival processes: when each request is sent.

Open-loop processes (poisson, gamma, constant, trace) produce a schedule of
send offsets in nanoseconds, a pure function of the process and one numpy
``Generator``. The closed-loop ``concurrency`` process has no schedule: a fixed
number of workers each send the next request when their previous one ends.

Every process has a scalar ``load`` (requests/s, or workers) and ``with_load``
so the capacity search can move it without knowing which process it is.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from tuner.core import StrictModel
from tuner.workload.trace import NS, TraceArrivals

__all__ = ["NS", "ArrivalProcess", "ConcurrencyArrivals", "ConstantArrivals", "GammaArrivals",
           "PoissonArrivals", "TraceArrivals"]


class _OpenLoop(StrictModel):
    rate: float = Field(gt=0, le=100_000, description="mean requests per second")

    @property
    def load(self) -> float:
        return self.rate

    @property
    def closed_loop(self) -> bool:
        return False

    @property
    def unit(self) -> str:
        """What ``load`` counts."""
        return "req/s"

    def _gaps(self, rng: np.random.Generator, n: int) -> np.ndarray:
        raise NotImplementedError

    def _times(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` arrival times starting at 0."""
        return np.concatenate([[0.0], np.cumsum(self._gaps(rng, n - 1))])

    def offsets_ns(
        self, rng: np.random.Generator, count: int | None, duration_s: float | None
    ) -> np.ndarray:
        """Send offsets from the start of the run: the first ``count`` arrivals, or all before
        ``duration_s``, whichever ends first. The first request goes at offset 0."""
        if count is not None:
            times = self._times(rng, count)[:count]
        elif duration_s is not None:
            times = self._times(rng, max(16, int(self.rate * duration_s * 1.2) + 16))
            while times[-1] < duration_s:
                times = np.concatenate([times, times[-1] + self._times(rng, len(times))[1:]])
        else:
            raise ValueError("either a request count or a duration is needed")
        if duration_s is not None:
            times = times[times < duration_s]
        offsets: np.ndarray = np.rint(times * NS).astype(np.int64)
        return offsets


class _Sampled(_OpenLoop):
    """Random gaps; with ``exact_rate`` (the default) a run offers exactly its rate.

    A plain sample of n gaps spans n/rate only on average (its realized rate is off by about
    1/sqrt(n): 5% for a step of 400 requests), so a capacity step would offer a load other than
    the one it is recorded at, differently for every seed. With ``exact_rate`` the sampled gaps
    are scaled to span exactly n/rate, as ``vllm bench serve`` does; for Poisson arrivals that
    is the Poisson process given its count (the times of n arrivals in a window are uniform).
    """

    exact_rate: bool = Field(default=True, description="scale the sampled gaps so that each "
                             "run offers exactly `rate` (false: the plain sample)")

    def offsets_ns(
        self, rng: np.random.Generator, count: int | None, duration_s: float | None
    ) -> np.ndarray:
        if not self.exact_rate:
            return super().offsets_ns(rng, count, duration_s)
        if count is None and duration_s is None:
            raise ValueError("either a request count or a duration is needed")
        n_window = None if duration_s is None else max(1, round(self.rate * duration_s))
        if count is not None and (n_window is None or count < n_window):
            n, span = count, count / self.rate
        else:
            assert n_window is not None
            assert duration_s is not None
            n, span = n_window, duration_s
        ends = np.cumsum(self._gaps(rng, n))  # the (n+1)-th arrival would come at the end
        times = np.concatenate([[0.0], ends[:-1]]) * (span / ends[-1])
        offsets: np.ndarray = np.rint(times * NS).astype(np.int64)
        return offsets


class PoissonArrivals(_Sampled):
    """Exponential inter-arrival times at ``rate``."""

    process: Literal["poisson"] = "poisson"

    def _gaps(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.exponential(1.0 / self.rate, size=n)

    def with_load(self, load: float) -> PoissonArrivals:
        return self.model_copy(update={"rate": load})


class GammaArrivals(_Sampled):
    """Gamma inter-arrival times with mean 1/rate and shape ``burstiness``.

    burstiness = 1 is Poisson; below 1 is burstier (coefficient of variation 1/sqrt(shape)),
    above 1 smoother. This is the convention of ``vllm bench serve --burstiness``.
    """

    process: Literal["gamma"] = "gamma"
    burstiness: float = Field(gt=0, le=1000)

    def _gaps(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.gamma(self.burstiness, 1.0 / (self.rate * self.burstiness), size=n)

    def with_load(self, load: float) -> GammaArrivals:
        return self.model_copy(update={"rate": load})


class ConstantArrivals(_OpenLoop):
    """One request every 1/rate seconds."""

    process: Literal["constant"] = "constant"

    def _gaps(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, 1.0 / self.rate)

    def with_load(self, load: float) -> ConstantArrivals:
        return self.model_copy(update={"rate": load})


class ConcurrencyArrivals(StrictModel):
    """Closed loop: ``concurrency`` workers, each sending its next request when one ends."""

    process: Literal["concurrency"] = "concurrency"
    concurrency: int = Field(ge=1, le=100_000)

    @property
    def load(self) -> float:
        return float(self.concurrency)

    @property
    def closed_loop(self) -> bool:
        return True

    @property
    def unit(self) -> str:
        """What ``load`` counts."""
        return "concurrent requests"

    def with_load(self, load: float) -> ConcurrencyArrivals:
        return self.model_copy(update={"concurrency": max(1, round(load))})


ArrivalProcess = Annotated[
    PoissonArrivals | GammaArrivals | ConstantArrivals | ConcurrencyArrivals | TraceArrivals,
    Field(discriminator="process"),
]
