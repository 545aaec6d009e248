"""The engine warm-up stops once latencies settle, and gives up (saying so) at its bound."""

from __future__ import annotations

import pytest

from tests.unit.fakes.summaries import fake_summary
from tuner.measurement.warmup import WarmupRound, settled, warm_up
from tuner.metrics import RunSummary, dist_ms
from tuner.workload import EngineWarmup


def rounds(*medians: tuple[float, float]) -> list[WarmupRound]:
    return [WarmupRound(load=1, requests=12, ttft_p50_ms=t, tpot_p50_ms=i) for t, i in medians]


@pytest.mark.parametrize(("medians", "expected"), [
    ([(900, 40)], False),                          # one round proves nothing
    ([(900, 40), (300, 20)], False),               # compiling: the first round was slow
    ([(900, 40), (300, 20), (280, 21)], True),     # settled within 25%
    ([(300, 20), (280, 30)], False),               # TTFT settled, TPOT did not
    ([(300, None), (290, None)], True),            # one-token outputs have no TPOT
])
def test_settled(medians: list[tuple[float, float]], expected: bool) -> None:
    assert settled(rounds(*medians), tolerance=0.25) is expected


def summary_with(ttft_ms: float, tpot_ms: float) -> RunSummary:
    return fake_summary(1.0, True).model_copy(update={
        "ttft_ms": dist_ms([ttft_ms * 1e6] * 5), "tpot_ms": dist_ms([tpot_ms * 1e6] * 5)})


async def test_warm_up_runs_until_the_medians_settle() -> None:
    seen = [(2000, 90), (700, 40), (320, 22), (300, 21), (310, 22)]

    async def run_round(i: int) -> RunSummary:
        return summary_with(*seen[i])

    result = await warm_up(run_round, EngineWarmup(tolerance=0.25))
    assert result.stable
    assert len(result.rounds) == 4


async def test_warm_up_gives_up_at_its_bound() -> None:
    now = [0.0]

    def clock() -> float:
        return now[0]

    async def run_round(i: int) -> RunSummary:
        now[0] += 10
        return summary_with(100 * (i + 1) ** 2, 10 * (i + 1))  # never settles

    result = await warm_up(run_round, EngineWarmup(max_s=35), clock=clock)
    assert not result.stable
    assert len(result.rounds) == 4
    assert result.seconds == 40


async def test_the_ramp_doubles_the_load_until_a_round_fails_the_slos_and_stops_improving(
) -> None:
    from tuner.measurement.warmup import ramp

    seen: list[float] = []

    async def run_round(load: float, i: int) -> RunSummary:
        seen.append(load)
        return fake_summary(load, load < 60)  # the engine holds its SLOs below 60

    done = await ramp(run_round, 8.0, EngineWarmup())
    assert seen == [16.0, 32.0, 64.0, 64.0]  # past the capacity, once more: no faster
    assert [r.load for r in done] == seen
    seen.clear()
    await ramp(run_round, 1.0, EngineWarmup(ramp_rounds=3))
    assert seen == [2.0, 4.0, 8.0]
    seen.clear()
    await ramp(run_round, 0.5, EngineWarmup())  # all passes: 64 times the first load at most
    assert seen == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    seen.clear()
    assert await ramp(run_round, 8.0, EngineWarmup(ramp_s=0)) == []
    assert seen == []
    await ramp(run_round, 1.0, EngineWarmup(ramp_rounds=3), integer=True)  # concurrency
    assert seen == [2.0, 4.0, 8.0]


async def test_the_ramp_goes_no_higher_than_the_capacity_search_can_reach() -> None:
    from tuner.measurement.warmup import ramp

    seen: list[float] = []

    async def run_round(load: float, i: int) -> RunSummary:
        seen.append(load)
        return fake_summary(load, load < 60)

    await ramp(run_round, 3.0, EngineWarmup(), ceiling=6.0)  # a search of two steps: 3, 6
    assert seen == [6.0]
    seen.clear()
    await ramp(run_round, 8.0, EngineWarmup(), ceiling=40.0)  # the last doubling is cut
    assert seen == [16.0, 32.0, 40.0]
    seen.clear()
    await ramp(run_round, 8.0, EngineWarmup(), ceiling=8.0)  # a search of one step
    assert seen == []
    await ramp(run_round, 16.0, EngineWarmup(), ceiling=64.0)  # failing at the ceiling: held
    assert seen == [32.0, 64.0, 64.0]


async def test_the_ramp_holds_a_failing_load_while_the_engine_leaves_its_slow_phase() -> None:
    """A fresh start is slow for its first rounds at a high load (slow_phase.txt): the ramp
    holds the load that failed while its rounds get faster, and doubles again once one
    passes."""
    from tuner.measurement.warmup import ramp

    seen: list[float] = []
    slow_tpot = iter([110.0, 70.0, 40.0])  # the slow phase at 32, then it is over

    async def run_round(load: float, i: int) -> RunSummary:
        seen.append(load)
        if load == 32.0:
            tpot = next(slow_tpot, 25.0)
            return summary_with(300, tpot).model_copy(update={
                "load": load, "slo": fake_summary(load, tpot < 50).slo})
        return summary_with(200, 20 if load < 100 else 60).model_copy(update={
            "load": load, "slo": fake_summary(load, load < 100).slo})

    done = await ramp(run_round, 8.0, EngineWarmup(tolerance=0.25))
    assert seen == [16.0, 32.0, 32.0, 32.0, 64.0, 128.0, 128.0]
    assert len(done) == len(seen)
    seen.clear()
    slow_tpot = iter([110.0, 70.0, 40.0])
    await ramp(run_round, 8.0, EngineWarmup(ramp_rounds=3))
    assert seen == [16.0, 32.0, 32.0]  # the bound on rounds holds while it holds a load
