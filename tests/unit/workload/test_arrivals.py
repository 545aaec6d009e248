import json

import numpy as np
import pytest
from scipy import stats

from tuner.workload.arrivals import (
    NS,
    ConcurrencyArrivals,
    ConstantArrivals,
    GammaArrivals,
    PoissonArrivals,
    TraceArrivals,
)


def gaps(process, n: int = 4000) -> np.ndarray:  # type: ignore[no-untyped-def]
    offsets = process.offsets_ns(np.random.default_rng(0), n, None)
    return np.diff(offsets) / NS


def test_poisson_gaps_are_exponential() -> None:
    g = gaps(PoissonArrivals(rate=5.0))
    assert stats.kstest(g, "expon", args=(0, 1 / 5.0)).pvalue > 0.01
    assert abs(g.mean() - 0.2) < 0.02


def test_gamma_burstiness_sets_the_coefficient_of_variation() -> None:
    g = gaps(GammaArrivals(rate=4.0, burstiness=0.25))
    assert abs(g.mean() - 0.25) < 0.03
    assert abs(g.std() / g.mean() - 2.0) < 0.2  # cv = 1/sqrt(shape)
    assert stats.kstest(g, "gamma", args=(0.25, 0, 1 / (4.0 * 0.25))).pvalue > 0.01


def test_constant_gaps_are_exact() -> None:
    g = gaps(ConstantArrivals(rate=8.0), 100)
    assert np.allclose(g, 0.125, atol=1e-9)


def test_duration_bounds_the_schedule() -> None:
    offsets = PoissonArrivals(rate=10).offsets_ns(np.random.default_rng(3), None, 30.0)
    assert offsets[0] == 0
    assert offsets[-1] < 30 * NS
    assert 200 < len(offsets) < 400
    count_first = PoissonArrivals(rate=10).offsets_ns(np.random.default_rng(3), 50, 30.0)
    assert len(count_first) == 50


def test_with_load_moves_the_rate_not_the_kind() -> None:
    moved = GammaArrivals(rate=1, burstiness=0.5).with_load(3.0)
    assert (moved.rate, moved.burstiness) == (3.0, 0.5)
    assert ConcurrencyArrivals(concurrency=4).with_load(6.6).concurrency == 7


def test_trace_replays_offsets_and_scales_to_a_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    lines = [{"offset_s": t, "input_tokens": 10 + t, "output_tokens": 5} for t in range(11)]
    lines.append({"timestamp": 12500, "input_length": 7, "output_length": 3})  # Mooncake keys
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    trace = TraceArrivals.model_validate({"process": "trace", "file": "t.jsonl"},
                                         context={"base_dir": tmp_path})
    offsets = trace.offsets_ns(np.random.default_rng(0), None, None)
    assert list(offsets[:3]) == [0, NS, 2 * NS]
    assert offsets[-1] == int(12.5 * NS)
    assert trace.entries[-1].input_tokens == 7
    faster = trace.with_load(trace.load * 2)
    assert faster.offsets_ns(np.random.default_rng(0), None, None)[-1] == int(6.25 * NS)


def test_trace_rejects_a_line_without_lengths(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "t.jsonl").write_text('{"offset_s": 0, "input_tokens": 3, "output_tokens": 1}\n'
                                      '{"offset_s": 1}\n')
    with pytest.raises(ValueError, match=r"t.jsonl line 2: `input_tokens` \(or input_length\) "
                       "missing; each line needs"):
        TraceArrivals.model_validate({"process": "trace", "file": "t.jsonl"},
                                     context={"base_dir": tmp_path})


def test_each_run_offers_exactly_its_rate() -> None:
    """A step is recorded at its rate: n requests span n/rate, whatever the seed."""
    for seed in range(20):
        offsets = PoissonArrivals(rate=50).offsets_ns(np.random.default_rng(seed), None, 8.0)
        assert len(offsets) == 400
        assert offsets[0] == 0
        assert offsets[-1] < 8 * NS
        counted = GammaArrivals(rate=50, burstiness=0.5).offsets_ns(
            np.random.default_rng(seed), 100, 8.0)
        assert len(counted) == 100
        assert counted[-1] < 2 * NS
    # the plain sample offers 50 req/s only on average: the span of 400 gaps varies by ~5%
    spans = [PoissonArrivals(rate=50, exact_rate=False).offsets_ns(
        np.random.default_rng(seed), 401, None)[-1] / NS for seed in range(20)]
    assert np.std(spans) / np.mean(spans) > 0.02


def test_exact_rate_keeps_the_shape_of_the_gaps() -> None:
    g = np.diff(PoissonArrivals(rate=5.0).offsets_ns(np.random.default_rng(1), None, 800.0)) / NS
    assert stats.kstest(g, "expon", args=(0, 1 / 5.0)).pvalue > 0.01
