from tests.unit.fakes.summaries import fake_summary
from tuner.measurement import CapacityResult
from tuner.metrics import dist_ms
from tuner.study.outcome import TrialResult
from tuner.study.trial import constraint_values
from tuner.workload import Slo

SLO = Slo(ttft_p95_ms=100.0, itl_p95_ms=10.0, max_error_rate=0.01)


def with_step(outcome: str, passed: bool, ttft_ms: float) -> TrialResult:
    step = fake_summary(2.0, passed).model_copy(update={"ttft_ms": dist_ms([ttft_ms * 1e6])})
    cap = CapacityResult(steps=[step], best=step if passed else None, lowest_failing_load=None,
                         stopped_by="converged")
    return TrialResult(number=1, config={}, defaults=False, outcome=outcome,  # type: ignore[arg-type]
                       best=cap.best, capacity=cap)


def test_feasible_trials_have_no_positive_constraint() -> None:
    c = constraint_values(with_step("ok", True, 50.0), SLO)
    assert all(v <= 0 for v in c.values())
    assert c["ttft"] == -0.5


def test_slo_infeasible_violates_by_its_margin() -> None:
    c = constraint_values(with_step("slo_infeasible", False, 300.0), SLO)
    assert c["ttft"] == 2.0


def test_launch_failures_violate_the_most() -> None:
    failed = TrialResult(number=2, config={}, defaults=False, outcome="oom")
    assert constraint_values(failed, SLO)["launch"] == 10.0
