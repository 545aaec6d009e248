"""The fit recovers the parameters of logs drawn from known distributions.

Tolerances: 3000 requests; a mean within 3%, a lognormal sigma or normal std within 8%, a
gamma burstiness within 15%, a class weight within 0.04 (each several standard errors).
"""

import numpy as np
import pytest

from tuner.workload.fit_dists import fit_arrivals, fit_lengths, ks_distance, split_classes
from tuner.workload.fit_workload import fit_workload
from tuner.workload.request_log import LoggedRequest, RequestLog

N = 3000


def test_ks_distance_is_the_largest_cdf_gap() -> None:
    assert ks_distance(np.array([1, 2, 3, 4]), np.array([1, 2, 3, 4])) == 0
    assert ks_distance(np.array([1, 1]), np.array([2, 2])) == 1
    assert ks_distance(np.array([1, 2]), np.array([1, 3])) == 0.5


def test_each_family_is_recovered() -> None:
    rng = np.random.default_rng(0)
    lognormal = np.rint(rng.lognormal(np.log(200) - 0.5**2 / 2, 0.5, N))
    fit = fit_lengths(lognormal)
    assert fit.spec["dist"] == "lognormal"
    assert fit.spec["mean"] == pytest.approx(200, rel=0.03)
    assert fit.spec["sigma"] == pytest.approx(0.5, rel=0.08)
    assert fit.ks < 0.05
    normal = np.rint(rng.normal(500, 60, N))
    fit = fit_lengths(normal)
    assert fit.spec["dist"] == "normal"
    assert (fit.spec["mean"], fit.spec["std"]) == (pytest.approx(500, rel=0.03),
                                                    pytest.approx(60, rel=0.08))
    fit = fit_lengths(rng.integers(1000, 2000, N, endpoint=True))
    assert (fit.spec["dist"], fit.spec["min"], fit.spec["max"]) == ("uniform", 1000, 2000)
    assert fit_lengths(np.full(10, 64)).spec == {"dist": "fixed", "value": 64}


def test_lengths_no_family_fits_are_replayed_as_observed() -> None:
    rng = np.random.default_rng(1)
    three_spikes = rng.choice([10, 500, 5000], size=N)
    fit = fit_lengths(three_spikes)
    assert fit.empirical
    assert min(fit.tried.values()) > 0.08


def test_a_uniform_class_with_a_neighbours_tail_stays_uniform() -> None:
    # a length class split off by two-means holds a few of the shorter class's longest
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.integers(1200, 2000, 970, endpoint=True),
                             rng.integers(480, 800, 30, endpoint=True)])
    fit = fit_lengths(values)
    assert fit.spec["dist"] == "uniform"
    assert fit.ks < 0.05
    assert 1150 < fit.spec["min"] < 1250
    assert fit.spec["max"] > 1950
    assert fit.tried["uniform"] > 0.2  # bounded by the outliers, it would not fit


def test_arrivals_poisson_or_gamma_from_the_cv() -> None:
    rng = np.random.default_rng(2)
    poisson = np.cumsum(rng.exponential(1 / 5, N))
    fit = fit_arrivals(poisson)
    assert fit.spec["process"] == "poisson"
    assert fit.spec["rate"] == pytest.approx(5, rel=0.05)
    bursty = np.cumsum(rng.gamma(0.25, 1 / (3 * 0.25), N))
    fit = fit_arrivals(bursty)
    assert fit.spec["process"] == "gamma"
    assert fit.spec["burstiness"] == pytest.approx(0.25, rel=0.15)
    assert fit.ks < 0.05
    assert fit_arrivals(bursty, rate="peak").spec["rate"] > fit.spec["rate"]


def test_classes_split_distinct_modes_only() -> None:
    rng = np.random.default_rng(3)
    assert len(split_classes(np.rint(rng.lognormal(5, 0.6, N)))) == 1
    mixed = np.concatenate([rng.lognormal(4, 0.4, 2100), rng.uniform(3500, 4500, 900)])
    short, long = split_classes(mixed)
    assert len(short) == pytest.approx(2100, abs=40)
    assert mixed[long].min() >= 3500


def synthetic_log(rng: np.random.Generator) -> RequestLog:
    times = np.cumsum(rng.gamma(0.5, 1 / (4 * 0.5), N))
    short = rng.random(N) < 0.7
    inputs = np.where(short, np.rint(rng.lognormal(np.log(80) - 0.4**2 / 2, 0.4, N)),
                      rng.integers(3500, 4500, N, endpoint=True))
    outputs = np.clip(np.rint(rng.normal(120, 30, N)), 16, 300)
    return RequestLog("csv", tuple(LoggedRequest(float(t), int(i), int(o))
                                   for t, i, o in zip(times, inputs, outputs, strict=True)))


def test_the_fit_recovers_a_known_workload() -> None:
    fitted = fit_workload(synthetic_log(np.random.default_rng(4)), source="log", model="m",
                          stem="w")
    w = fitted.workload
    chat, doc = w["classes"]
    assert chat["weight"] == pytest.approx(0.7, abs=0.04)
    assert chat["input"]["dist"] == "lognormal"
    assert chat["input"]["mean"] == pytest.approx(80, rel=0.03)
    assert chat["input"]["sigma"] == pytest.approx(0.4, rel=0.08)
    assert (doc["input"]["dist"], doc["input"]["min"], doc["input"]["max"]) == (
        "uniform", 3500, 4500)
    assert chat["output"]["dist"] == "normal"
    assert chat["output"]["mean"] == pytest.approx(120, rel=0.03)
    assert w["arrival"]["process"] == "gamma"
    assert w["arrival"]["burstiness"] == pytest.approx(0.5, rel=0.15)
    assert w["arrival"]["rate"] == pytest.approx(4, rel=0.05)
    assert any("KS" in line for line in fitted.report)


def test_sessions_are_fitted_as_a_conversation() -> None:
    rng = np.random.default_rng(5)
    requests = []
    for s, start in enumerate(np.cumsum(rng.exponential(2.0, 400))):
        context, t = 50, float(start)  # a 50-token system prompt
        for _ in range(int(rng.integers(2, 6, endpoint=True))):
            message, answer = int(rng.integers(20, 60, endpoint=True)), 40
            context += message
            requests.append(LoggedRequest(t, context, answer, session=f"s{s}",
                                          prefix_hash="sys", prefix_tokens=50))
            context += answer
            t += 3.0
    requests.sort(key=lambda r: r.time_s)
    fitted = fit_workload(RequestLog("csv", tuple(requests)), source="log", model="m",
                          stem="w")
    (cls,) = fitted.workload["classes"]
    session = cls["session"]
    assert (session["turns"]["dist"], session["turns"]["min"], session["turns"]["max"]) == (
        "uniform", 2, 6)
    assert session["think_ms"] == {"dist": "fixed", "value": 3000}
    assert session["system_tokens"] == 50
    assert (cls["input"]["min"], cls["input"]["max"]) == (20, 60)
    assert fitted.workload["arrival"]["rate"] == pytest.approx(0.5, rel=0.1)
    assert "prefix" not in fitted.workload


def test_mooncake_prefix_sharing_is_fitted() -> None:
    requests = [LoggedRequest(i * 0.5, 1024 + 100, 10, hash_ids=(i % 4, 1000 + i, 2000 + i))
                for i in range(200)]
    fitted = fit_workload(RequestLog("mooncake", tuple(requests)), source="t", model="m",
                          stem="w")
    assert fitted.workload["prefix"] == {"groups": 4, "tokens": 512, "share": 1.0}
    assert fitted.workload["classes"][0]["input"] == {"dist": "fixed", "value": 612}
    assert any("prefix reuse" in line for line in fitted.report)
