"""The study's closing table stays readable in an 80-column terminal."""

from __future__ import annotations

from rich.console import Console

from tuner.metrics import Interval, RatioVerdict
from tuner.report import final_table
from tuner.study.repeats.remeasure import Remeasured, RemeasureOutcome, TrialVerdict
from tuner.study.results.summary import StudySummary


def _remeasured(trial: int, defaults: bool) -> Remeasured:
    return Remeasured(engine="vllm", trial=trial, defaults=defaults, config={}, load=12.0,
                      capacities=[11.6, 12.4], runs=2, slo_passed_runs=2, failures=[],
                      cost=Interval(value=0.0739, low=0.0694, high=0.0787),
                      ttft_p95_ms=[104.2, 118.9], itl_p95_ms=[13.1, 14.2],
                      output_tokens_per_s=[300.0, 310.0], command=None)


def table_text(outcome: RemeasureOutcome, study: str) -> str:
    """The final table of a study with ``outcome``, as an 80-column terminal shows it."""
    summary = StudySummary.model_construct(
        study=study, remeasure=outcome, defaults_trial=None, best_trial=None,
        tuning_delta=outcome.tuning_delta)
    console = Console(width=80, record=True)
    console.print(final_table(summary))
    return console.export_text()


def test_labels_and_intervals_keep_to_one_line_at_80_columns() -> None:
    outcome = RemeasureOutcome.model_construct(
        winner=_remeasured(13, False), defaults=_remeasured(0, True),
        tuning_delta=Interval(value=1.0, low=0.93, high=1.08))
    text = table_text(outcome, "vllm-workload-ci")
    assert "defaults (trial 0)" in text
    assert "best (trial 13)" in text
    assert "$0.0739 (0.0694-0.0787)" in text
    assert "…" not in text


def test_the_tuning_delta_is_the_paired_interval_the_verdict_is_drawn_from() -> None:
    """Two fresh starts each: resampling them (the bootstrap) cannot see how far restarts
    move, so the table shows the paired interval, the one the verdict line under it uses."""
    paired = RatioVerdict(kind="unresolved", ratio=1.04, low=0.88, high=1.22, resolution=0.05,
                          pairs=2, level=0.95, spread="pairs")
    outcome = RemeasureOutcome.model_construct(
        winner=_remeasured(4, False), defaults=_remeasured(0, True),
        tuning_delta=Interval(value=1.04, low=1.02, high=1.07),
        verdicts=[TrialVerdict(trial=4, verdict=paired)])
    text = table_text(outcome, "vllm-quickstart")
    assert "1.04x (0.88-1.22)" in text
    assert "1.02-1.07" not in text
