"""The study's closing table stays readable in an 80-column terminal."""

from __future__ import annotations

from rich.console import Console

from tuner.metrics import Interval
from tuner.report import final_table
from tuner.study.repeats.remeasure import Remeasured, RemeasureOutcome
from tuner.study.results.summary import StudySummary


def _remeasured(trial: int, defaults: bool) -> Remeasured:
    return Remeasured(engine="vllm", trial=trial, defaults=defaults, config={}, load=12.0,
                      capacities=[11.6, 12.4], runs=2, slo_passed_runs=2, failures=[],
                      cost=Interval(value=0.0739, low=0.0694, high=0.0787),
                      ttft_p95_ms=[104.2, 118.9], itl_p95_ms=[13.1, 14.2],
                      output_tokens_per_s=[300.0, 310.0], command=None)


def test_labels_and_intervals_keep_to_one_line_at_80_columns() -> None:
    outcome = RemeasureOutcome.model_construct(
        winner=_remeasured(13, False), defaults=_remeasured(0, True),
        tuning_delta=Interval(value=1.0, low=0.93, high=1.08))
    summary = StudySummary.model_construct(
        study="vllm-workload-ci", remeasure=outcome, defaults_trial=None, best_trial=None,
        tuning_delta=outcome.tuning_delta)
    console = Console(width=80, record=True)
    console.print(final_table(summary))
    text = console.export_text()
    assert "defaults (trial 0)" in text
    assert "best (trial 13)" in text
    assert "$0.0739 (0.0694-0.0787)" in text
    assert "…" not in text
