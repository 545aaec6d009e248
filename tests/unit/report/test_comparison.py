"""The comparison's arithmetic and its report, from stored runs (records written to disk)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tuner.loadgen import RequestRecord, write_records_csv
from tuner.report.comparison import (
    Comparison,
    EngineResult,
    TrialPoint,
    comparison_verdict,
    engine_deltas,
    engine_result,
    operations,
    tuning_gained,
)
from tuner.report.document import html_page, markdown, rows
from tuner.report.plots import all_plots, pareto
from tuner.study import Timing, TrialResult
from tuner.study.repeats import MeasuredRun

MS = 1_000_000


def records(tokens_per_request: int, n: int, window_ms: int, seed: int) -> list[RequestRecord]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        sent = int(i * window_ms / n) * MS
        r = RequestRecord(index=i, class_name="c", prefix_group=None, input_tokens=10,
                          planned_output_tokens=tokens_per_request, scheduled_ns=sent,
                          sent_ns=sent)
        r.first_token_ns, r.done_ns = sent + 5 * MS, sent + 50 * MS
        r.chunk_ns, r.chunk_tokens = [r.first_token_ns], [1]
        r.output_tokens = int(tokens_per_request + rng.integers(-2, 3))
        out.append(r)
    return out


def run(tmp: Path, engine: str, trial: int, defaults: bool, tokens: int, rep: int
        ) -> MeasuredRun:
    path = tmp / f"{engine}-{trial}-{rep}.csv"
    write_records_csv(records(tokens, 200, 20_000, seed=trial * 10 + rep), path)
    return MeasuredRun(engine=engine, trial=trial, defaults=defaults, repeat=rep, load=10.0,
                       usd_per_hour=3.6, records_path=str(path))


def trial(number: int, defaults: bool, cost: float) -> TrialResult:
    return TrialResult(number=number, config={"k": number}, defaults=defaults, outcome="ok",
                       cost_per_m_output_tokens=cost, max_load=10.0)


def test_tuning_and_engine_deltas_and_verdict(tmp_path: Path) -> None:
    # Engine a: defaults make 50 tokens/request, tuned 100 (2x cheaper). Engine b: tuned 90.
    # Capacities: a's tuned starts serve about twice its defaults', paired repeat by repeat.
    loads = {("a", 0): [10.0, 11.0], ("a", 3): [20.0, 21.5], ("b", 0): [10.0, 10.5],
             ("b", 2): [11.0, 11.5]}
    runs = [run(tmp_path, e, t, t == 0, tokens, r).model_copy(update={"load": loads[e, t][r]})
            for e, t, tokens in (("a", 0, 50), ("a", 3, 100), ("b", 0, 80), ("b", 2, 90))
            for r in range(2)]
    a, sa = engine_result("a", "A", "1", "s", [trial(0, True, 2.0), trial(3, False, 1.0)],
                          {"defaults": trial(0, True, 2.0), "tuned": trial(3, False, 1.0)},
                          runs, seed=0)
    b, sb = engine_result("b", "B", "1", "s", [trial(0, True, 1.2), trial(2, False, 1.1)],
                          {"defaults": trial(0, True, 1.2), "tuned": trial(2, False, 1.1)},
                          runs, seed=0)
    assert a.tuning_delta is not None
    assert 1.9 < a.tuning_delta.value < 2.1
    assert a.tuning_delta.low > 1.5
    deltas = engine_deltas([a, b], {"a": sa, "b": sb})
    tuned = next(d for d in deltas if d.kind == "tuned")
    assert tuned.best == "a"
    assert 1.05 < tuned.ratio.value < 1.15
    assert a.tuning_verdict is not None
    assert a.tuning_verdict.kind == "better"
    assert a.tuning_verdict.pairs == 2
    text = comparison_verdict([a, b], deltas)
    assert text.startswith("tuned A (trial 3) beats the defaults by 1.9"), text
    assert "resolved at ±5%" in text
    assert text.endswith("tune before you switch")
    assert rows_of(a)[3].endswith("paired, resolved")

    # Without pairs, the bootstrap over requests decides, at the workload's resolution
    unpaired = a.model_copy(update={"tuning_verdict": None})
    assert tuning_gained(unpaired, 0.05)
    assert not tuning_gained(unpaired, a.tuning_delta.low - 1.0 + 0.01)


def rows_of(e: EngineResult) -> list[str]:
    c = Comparison(workload="w", slo_ttft_p95_ms=1.0, engines=[e], engine_deltas=[], verdict="",
                   runs=[])
    return rows(c)[0]


def test_a_tuning_delta_sure_over_requests_but_not_over_starts_is_unresolved(
        tmp_path: Path) -> None:
    # The three-engine comparison's transformers serve: tuned 1.26x over thousands of requests
    # (the bootstrap's interval clears 1), but two restarts moved each capacity by ~8%.
    loads = {0: [11.4, 10.6], 1: [14.6, 13.2]}
    runs = [run(tmp_path, "t", n, n == 0, 100 if n else 80, r).model_copy(
        update={"load": loads[n][r]}) for n in (0, 1) for r in range(2)]
    t, _ = engine_result("t", "T", "1", "s", [trial(0, True, 1.25), trial(1, False, 1.0)],
                         {"defaults": trial(0, True, 1.25), "tuned": trial(1, False, 1.0)},
                         runs, seed=0, resolution=0.05)
    assert t.tuning_delta is not None
    assert t.tuning_delta.low > 1.0
    assert t.tuning_verdict is not None
    assert t.tuning_verdict.kind == "unresolved"
    text = comparison_verdict([t], [])
    assert text.startswith("unresolved: the best configuration of T (trial 1) against the "
                           "defaults 1.2"), text
    assert "saved" not in text
    cell = rows_of(t)[3]
    assert cell.endswith("paired, unresolved"), cell


def test_overlapping_engines_call_no_winner(tmp_path: Path) -> None:
    runs = [run(tmp_path, "a", 1, False, 100, r) for r in range(2)]
    runs += [run(tmp_path, "b", 1, False, 100, r + 5) for r in range(2)]
    a, sa = engine_result("a", "A", "1", "s", [], {"tuned": trial(1, False, 1.0)}, runs, 0)
    b, sb = engine_result("b", "B", "1", "s", [], {"tuned": trial(1, False, 1.0)}, runs, 0)
    deltas = engine_deltas([a, b], {"a": sa, "b": sb})
    assert not deltas[0].winner_called
    assert "no winner can be called" in comparison_verdict([a, b], deltas)


def test_the_engine_delta_is_the_paired_verdict_of_side_by_side_starts(tmp_path: Path) -> None:
    # Each repeat's starts of the two engines ran side by side: a's capacity about twice b's.
    loads = {"a": [20.0, 23.0, 21.0, 22.0], "b": [10.0, 11.0, 10.8, 10.6]}
    runs = [run(tmp_path, e, 1, False, 100, r).model_copy(update={"load": loads[e][r]})
            for e in ("a", "b") for r in range(4)]
    a, sa = engine_result("a", "A", "1", "s", [], {"tuned": trial(1, False, 0.5)}, runs, 0)
    b, sb = engine_result("b", "B", "1", "s", [], {"tuned": trial(1, False, 1.0)}, runs, 0)
    a.tuned.cost.value, b.tuned.cost.value = 0.5, 1.0  # type: ignore[union-attr]
    (delta,) = engine_deltas([a, b], {"a": sa, "b": sb}, runs, resolution=0.05)
    assert delta.verdict is not None
    assert delta.verdict.kind == "better"
    assert delta.verdict.pairs == 4
    assert delta.winner_called
    assert 1.9 < delta.verdict.ratio < 2.1
    text = comparison_verdict([a, b], [delta])
    assert "A (tuned) beats B (tuned) by 2.0" in text
    assert "resolved at ±5%" in text
    # the same starts, the engines a few percent apart: within the resolution, no winner
    close = [r.model_copy(update={"load": r.load * (1.0 if r.engine == "a" else 1.9)})
             for r in runs]
    (near,) = engine_deltas([a, b], {"a": sa, "b": sb}, close, resolution=0.2)
    assert near.verdict is not None
    assert near.verdict.kind == "equivalent"
    assert not near.winner_called
    assert "are within ±20% of each other" in comparison_verdict([a, b], [near])


def test_defaults_that_stay_cheapest_are_not_called_a_saving(tmp_path: Path) -> None:
    # Both engines' best re-measured config is their defaults; b costs 2x more per token.
    runs = [run(tmp_path, "a", 0, True, 100, r) for r in range(2)]
    runs += [run(tmp_path, "b", 0, True, 50, r) for r in range(2)]
    pick = {"defaults": trial(0, True, 1.0), "tuned": trial(0, True, 1.0)}
    a, sa = engine_result("a", "A", "1", "s", [trial(0, True, 1.0)], pick, runs, 0)
    b, sb = engine_result("b", "B", "1", "s", [trial(0, True, 2.0)], pick, runs, 0)
    text = comparison_verdict([a, b], engine_deltas([a, b], {"a": sa, "b": sb}))
    assert text.startswith("tuning found nothing cheaper than the defaults of A or B")
    assert "saved" not in text
    assert text.endswith("switching engines pays more than tuning")


def test_pareto_front() -> None:
    pts = [TrialPoint(engine="e", number=i, defaults=False, outcome="ok", cost=c,
                      ttft_p95_ms=t, max_load=1) for i, (t, c) in
           enumerate([(10, 5.0), (20, 3.0), (30, 4.0), (40, 1.0), (15, 6.0)])]
    assert [p.number for p in pareto(pts)] == [0, 1, 3]


def test_report_files_are_self_contained(tmp_path: Path) -> None:
    runs = [run(tmp_path, "a", 0, True, 50, 0), run(tmp_path, "a", 3, False, 100, 0)]
    a, _ = engine_result("a", "A", "1", "s", [trial(0, True, 2.0), trial(3, False, 1.0)],
                         {"defaults": trial(0, True, 2.0), "tuned": trial(3, False, 1.0)},
                         runs, seed=0)
    c = Comparison(workload="w.yaml", slo_ttft_p95_ms=100, engines=[a], engine_deltas=[],
                   verdict="v", runs=runs)
    plots = all_plots(c, tmp_path / "out")
    assert all(p.stat().st_size > 1000 for p in plots.values())
    page = html_page(c, plots)
    assert page.count("data:image/png;base64,") == 3
    md = markdown(c, plots)
    assert "| A |" in md
    assert "cost.png" in md


def test_a_configuration_that_met_the_slos_at_no_load_on_a_fresh_start_is_noted(
        tmp_path: Path) -> None:
    runs = [run(tmp_path, "a", 0, True, 50, r) for r in range(2)]
    runs += [run(tmp_path, "a", 3, False, 100, r).model_copy(
        update={"failure": None if r == 0 else "slo_infeasible: no load met the SLOs"})
        for r in range(2)]
    runs += [run(tmp_path, "b", 0, True, 40, r) for r in range(2)]
    a, sa = engine_result("a", "A", "1", "s", [trial(0, True, 2.0), trial(3, False, 1.0)],
                          {"defaults": trial(0, True, 2.0), "tuned": trial(3, False, 1.0)},
                          runs, seed=0)
    b, sb = engine_result("b", "B", "1", "s", [trial(0, True, 2.5)],
                          {"defaults": trial(0, True, 2.5), "tuned": trial(0, True, 2.5)},
                          runs, seed=0)
    assert a.tuned is not None
    assert a.tuned.defaults  # the cheaper search best did not hold: the defaults stay
    assert a.search_best is not None
    assert a.search_best.capacities == [10.0]
    assert a.note.startswith("the search's best (trial 3) was cheaper on fresh starts")
    assert a.note.endswith("; tuned: met the SLOs at no load on 1 of 2 fresh starts (the search "
                           "found 10)")
    assert b.note == ""
    text = comparison_verdict([a, b], engine_deltas([a, b], {"a": sa, "b": sb}))
    assert "at no load" not in text  # what is chosen (A's defaults) held on every start
    held = a.model_copy(update={"defaults": a.defaults.model_copy(update={"slo_passed_runs": 1})
                                if a.defaults else None})
    text = comparison_verdict([held, b], engine_deltas([held, b], {"a": sa, "b": sb}))
    assert text.endswith("(but A met the SLOs at no load on some fresh starts: see the notes)")


def test_a_search_best_that_loses_to_the_defaults_on_fresh_starts_is_not_the_tuned_choice(
        tmp_path: Path) -> None:
    runs = [run(tmp_path, "a", 0, True, 100, r) for r in range(2)]
    runs += [run(tmp_path, "a", 11, False, 88, r) for r in range(2)]  # cheaper in the search
    a, samples = engine_result("a", "A", "1", "s", [trial(0, True, 1.0), trial(11, False, 0.9)],
                               {"defaults": trial(0, True, 1.0), "tuned": trial(11, False, 0.9)},
                               runs, seed=0)
    assert a.tuned is not None
    assert a.tuned.defaults
    assert a.search_best is not None
    assert a.search_best.trial == 11
    assert a.tuning_delta is not None
    assert a.tuning_delta.value == 1.0
    assert a.note.startswith("the search's best (trial 11) cost more than the defaults on fresh "
                             "starts")
    assert samples["tuned"] is samples["defaults"]


def test_the_page_shows_what_an_operator_lives_with(tmp_path: Path) -> None:
    """Start-up (the median of the starts that got ready, per start), whether /health answered
    before the engine served, its Prometheus metrics, its status as the spec records it."""
    started = [trial(n, n == 0, 1.0).model_copy(update={
        "health_lead_s": lead, "metric_families": families, "starts": starts,
        "timing": Timing(startup_s=seconds)})
        for n, lead, families, starts, seconds in ((0, 0.0, 61, 1, 10.0), (1, 0.0, 61, 2, 24.0),
                                                   (2, 1.2, 61, 1, 30.0))]
    never_ready = trial(3, False, 1.0).model_copy(update={"outcome": "startup_timeout"})
    ops = operations([*started, never_ready], maintenance="maintained", metrics_endpoint=True)
    assert (ops.starts, ops.startup_median_s, ops.health_lead_max_s) == (3, 12.0, 1.2)
    assert ops.cells() == ["12.0 s (median of 3)", "yes: up to 1.2 s before", "61 families",
                           "maintained"]
    none = operations(started, maintenance="maintenance mode", metrics_endpoint=False)
    assert none.cells()[2] == "none (no endpoint)"
    assert operations([never_ready], maintenance="m", metrics_endpoint=True).cells()[:2] == [
        "not recorded", "not recorded"]
    runs = [run(tmp_path, "a", 0, True, 50, 0)]
    a, _ = engine_result("a", "A", "1", "s", started[:1], {"defaults": started[0]}, runs,
                         seed=0, ops=none)
    c = Comparison(workload="w.yaml", slo_ttft_p95_ms=100, engines=[a], engine_deltas=[],
                   verdict="v", runs=runs)
    md = markdown(c, {})
    assert "## What an operator lives with" in md
    assert ("| A | 1 | 12.0 s (median of 3) | yes: up to 1.2 s before | none (no endpoint) | "
            "maintenance mode |") in md
    assert "What an operator lives with" in html_page(c, {})


def test_a_difference_inside_the_resolution_is_no_win_over_requests(tmp_path: Path) -> None:
    """Three engines at the same capacity whose requests differ by a token or two: the
    bootstrap over requests is narrow, but a 0.5% difference is no winner, and with no tuning
    gain either the advice says neither resolved (the CI comparison said "switching engines
    pays more than tuning" on 1.00x (1.00-1.00))."""
    results, samples = [], {}
    for name, tokens in (("a", 200), ("b", 199), ("c", 198)):
        runs = [run(tmp_path, name, 0, True, tokens, r) for r in range(2)]
        r, s = engine_result(name, name.upper(), "1", "s", [trial(0, True, 1.0)],
                             {"defaults": trial(0, True, 1.0), "tuned": trial(0, True, 1.0)},
                             runs, seed=0)
        results.append(r)
        samples[name] = s
    deltas = engine_deltas(results, samples, resolution=0.05)
    assert deltas
    assert not any(d.winner_called for d in deltas), [d.ratio for d in deltas]
    assert comparison_verdict(results, deltas).endswith(
        "neither tuning nor switching engines resolved a gain here")
