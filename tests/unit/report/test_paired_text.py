"""The study's side-by-side verdict in one line: a win, nothing to gain, or unresolved."""

from __future__ import annotations

from tuner.metrics import RatioVerdict
from tuner.report.study_report import paired_text


def verdict(kind: str, ratio: float, low: float, high: float) -> RatioVerdict:
    return RatioVerdict(kind=kind, ratio=ratio, low=low, high=high,  # type: ignore[arg-type]
                        resolution=0.05, pairs=3, level=0.95, spread="pooled")


def test_the_three_verdicts_read_as_the_issue_asks() -> None:
    assert paired_text("vLLM", verdict("better", 1.12, 1.08, 1.16), 7, "win") == (
        "tuned vLLM (trial 7) beats the defaults by 1.12x (1.08-1.16), resolved at ±5%")
    assert paired_text("vLLM", verdict("equivalent", 1.02, 0.98, 1.04), 3, "no_gain") == (
        "no configuration of vLLM beats the defaults by more than 5% (best: trial 3, 1.02x "
        "(0.98-1.04))")
    assert paired_text("vLLM", verdict("unresolved", 1.06, 0.97, 1.16), 2, "unresolved") == (
        "unresolved: the best configuration of vLLM (trial 2) against the defaults 1.06x "
        "(0.97-1.16) after 3 pairs of fresh starts, not decided at ±5%; rerun with more "
        "starts (--race N, or more --repeats)")
