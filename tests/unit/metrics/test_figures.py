import numpy as np
import pytest

from tuner.loadgen import RequestRecord, RunOutcome, ServerCaps, read_records_csv, write_records_csv
from tuner.metrics.cost import cost_per_million
from tuner.metrics.figures import dist_ms
from tuner.metrics.run_summary import summarise
from tuner.workload import Workload

MS = 1_000_000


def done(i: int, sent_ms: int, ttft_ms: int, gaps_ms: list[int], *, warm: bool = False
         ) -> RequestRecord:
    r = RequestRecord(index=i, class_name="c", prefix_group=None, input_tokens=10,
                      planned_output_tokens=len(gaps_ms) + 1, scheduled_ns=sent_ms * MS,
                      sent_ns=sent_ms * MS, warmup=warm)
    t = (sent_ms + ttft_ms) * MS
    r.first_token_ns = t
    r.chunk_ns.append(t)
    r.chunk_tokens.append(1)
    for g in gaps_ms:
        t += g * MS
        r.chunk_ns.append(t)
        r.chunk_tokens.append(1)
    r.done_ns = t
    r.output_tokens, r.prompt_tokens, r.status = len(gaps_ms) + 1, 10, 200
    return r


W = Workload.model_validate({
    "model": "m", "classes": [{"name": "c", "weight": 1, "input": {"dist": "fixed", "value": 10},
                               "output": {"dist": "fixed", "value": 3}}],
    "arrival": {"process": "poisson", "rate": 1}, "stop": {"requests": 3},
    "slo": {"ttft_p95_ms": 100, "itl_p95_ms": 20}, "cost": {"usd_per_hour": 3.6}})


def test_summary_figures_by_their_formulas() -> None:
    recs = [done(0, 0, 50, [10, 10]), done(1, 500, 80, [10, 40]), done(2, 900, 40, [10, 10]),
            done(3, 0, 5000, [10], warm=True)]
    s = summarise(RunOutcome(4.0, recs, 3, 10**9, None, None), W, ServerCaps())
    assert s.requests == 3
    assert s.completed == 3
    assert s.ttft_ms.mean == pytest.approx((50 + 80 + 40) / 3)
    assert s.itl_ms.count == 6
    assert s.itl_ms.max == pytest.approx(40)
    # window: first send 0 ms .. last completion 900+40+20 = 960 ms
    assert s.duration_s == pytest.approx(0.96)
    assert s.output_token_throughput == pytest.approx(9 / 0.96)
    # $3.6/h = $0.001/s; 9.375 tok/s -> $106.67 per M tokens
    assert s.cost_per_m_output_tokens == pytest.approx(0.001 / (9 / 0.96) * 1e6)
    assert s.tpot_ms.max == pytest.approx(25)  # (130 - 80) / 2 for request 1
    assert s.goodput_rps == pytest.approx(2 / 0.96)  # request 1 misses the 20 ms ITL bound
    assert not s.slo.passed
    assert s.slo.failed() == ["itl_p95_ms"]
    assert s.input_length_match == 1.0
    assert s.output_length_match == 1.0


def test_cost_formula() -> None:
    assert cost_per_million(3.6, 1000.0) == pytest.approx(1.0)
    assert cost_per_million(1.0, 0.0) is None


def test_dist_percentiles() -> None:
    d = dist_ms(np.arange(1, 101) * MS)
    assert (d.p50, d.p99, d.max) == (pytest.approx(50.5), pytest.approx(99.01), 100.0)
    assert dist_ms([]).p95 is None


def test_a_consumed_array_gives_the_same_figures_to_the_bit() -> None:
    values = np.random.default_rng(37).lognormal(16, 1, 5000)
    kept = values.copy()
    assert dist_ms(values, consume=True) == dist_ms(kept)
    assert dist_ms(kept) == dist_ms(list(kept))  # and a copy's figures leave it as it was


def test_records_round_trip_through_csv(tmp_path) -> None:  # type: ignore[no-untyped-def]
    recs = [done(0, 0, 50, [10, 10]), done(1, 5, 60, [])]
    recs[1].error, recs[1].prefix_group = "HTTP 500: x", 2
    for r in recs:
        r.seal()  # as the client leaves every record it ends
    write_records_csv(recs, tmp_path / "r.csv")
    assert read_records_csv(tmp_path / "r.csv") == recs


def test_the_rate_requests_went_out_is_next_to_the_nominal_load() -> None:
    """13 requests sent over 4.8 s of a step at load 4: sent at 2.5 req/s."""
    recs = [done(i, i * 400, 10, [5]) for i in range(13)]
    s = summarise(RunOutcome(4.0, recs, None, 5 * 10**9, None, None), W, ServerCaps())
    assert s.load == 4.0
    assert s.load_unit == "req/s"
    assert s.sent_rps == 12 / 4.8


def test_throughput_is_never_taken_over_less_than_the_requests_offered() -> None:
    """One request at 0.25 req/s stands for 4 s of load: its 3 tokens are 0.75 tokens/s, not
    3 tokens over its own 70 ms."""
    s = summarise(RunOutcome(0.25, [done(0, 0, 50, [10, 10])], None, 4 * 10**9, None, None),
                  W, ServerCaps())
    assert s.duration_s == 4.0
    assert s.output_token_throughput == 3 / 4.0


def test_a_run_of_warm_up_only_is_not_measured_and_says_why() -> None:
    recs = [done(i, i * 100, 10, [5], warm=True) for i in range(3)]
    s = summarise(RunOutcome(4.0, recs, 3, 10**9, None, None), W, ServerCaps())
    assert s.not_measured == ("all 3 requests sent were warm-up (warmup.requests or "
                              "warmup.duration_s cover the whole run): give a longer run or "
                              "less warm-up")
    assert not s.slo.passed
    measured = summarise(RunOutcome(4.0, [done(0, 0, 10, [5])], 1, 10**9, None, None), W,
                         ServerCaps())
    assert measured.not_measured is None


def test_chunk_counts_past_a_byte_widen_and_survive_the_csv(tmp_path) -> None:  # type: ignore[no-untyped-def]
    r = done(0, 0, 10, [5, 5])
    r.add_chunk(r.chunk_ns[-1] + 5 * MS, 300)  # a server that sent 300 tokens in one chunk
    r.add_chunk(r.chunk_ns[-1] + 5 * MS, -1)   # and then a count that went back
    assert list(r.chunk_tokens) == [1, 1, 1, 300, -1]
    write_records_csv([r], tmp_path / "r.csv")
    back = read_records_csv(tmp_path / "r.csv")[0]
    assert list(back.chunk_tokens) == [1, 1, 1, 300, -1]
    assert back.chunk_ns == r.chunk_ns
