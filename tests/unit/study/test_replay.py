"""The offline replay of samplers against a measured table, on a small synthetic table."""

from __future__ import annotations

import numpy as np
import optuna
import pytest

from tuner.study.replay import (
    ENCODINGS,
    GRID_ORDER,
    MeasuredTable,
    TableRow,
    params_of,
    replay,
    suggest_config,
)
from tuner.study.samplers import SAMPLERS


def table(*, noisy_decoy: bool = False) -> MeasuredTable:
    """18 configurations: the cost falls with `batch` to a best at 16 with `mode` "b"; batch 1
    fails its SLOs; mode "c" with batch 64 is rejected before launch. The decoy (batch 2, mode
    "a") measured once very cheap and once very dear."""
    rows = []
    for batch in (1, 2, 4, 8, 16, 64):
        for mode in ("a", "b", "c"):
            config = {"batch": batch, "mode": mode}
            if batch == 64 and mode == "c":
                rows.append(TableRow(config=config, outcome="invalid_config",
                                     rejected_before_launch=True))
            elif batch == 1:
                rows.append(TableRow(config=config, outcome="slo_infeasible"))
            else:
                base = 1.0 + abs(np.log2(batch) - 4) * 0.2 + {"a": 0.3, "b": 0.0, "c": 0.1}[mode]
                costs = [base * 0.98, base * 1.02]
                if noisy_decoy and (batch, mode) == (2, "a"):
                    costs = [0.5, 4.0]
                rows.append(TableRow(config=config, outcome="ok", costs=costs))
    rows.append(TableRow(config={"batch": 8, "mode": "a"}, outcome="ok", costs=[1.5, 1.5],
                         defaults=True))
    return MeasuredTable(engine="test", knobs={"batch": [1, 2, 4, 8, 16, 64],
                                               "mode": ["a", "b", "c"]}, rows=rows)


def test_a_replayed_study_counts_launched_trials_and_tracks_true_costs() -> None:
    t = table()
    run = replay(t, "tpe", seed=1, trials=10)
    assert len(run.found) == len(run.picked) == 10
    assert run.found == sorted(run.found, reverse=True)  # the best found never worsens
    assert run.found[0] == pytest.approx(1.5)             # the defaults go first
    assert t.best_cost() == pytest.approx(1.0)
    assert run.trials_to(t.best_cost() * 1.05) in (None, *range(1, 11))


def test_every_sampler_replays() -> None:
    for name in SAMPLERS:
        run = replay(table(), name, seed=0, trials=6)
        assert len(run.found) == 6, name


def test_a_grid_search_of_the_whole_table_finds_the_best() -> None:
    t = table()
    run = replay(t, "random", seed=3, trials=200)  # rejected configurations are not counted
    assert run.found[-1] == pytest.approx(t.best_cost())


def test_intensification_keeps_a_lucky_measurement_from_winning() -> None:
    t = table(noisy_decoy=True)
    decoy = 2.25  # the true cost of the decoy: mean of 0.5 and 4.0

    def lucky_picks(intensify: bool) -> int:
        return sum(replay(t, "random", seed=s, trials=17, intensify=intensify).picked[-1]
                   == pytest.approx(decoy) for s in range(40))

    assert lucky_picks(intensify=True) < lucky_picks(intensify=False)
    assert lucky_picks(intensify=True) <= 2


def test_an_incomplete_table_is_refused() -> None:
    t = table()
    t.rows = t.rows[3:]
    with pytest.raises(ValueError, match="lacks 3 of 18"):
        replay(t, "tpe", seed=0, trials=5)


def test_a_table_says_how_far_its_defaults_drifted_while_it_was_built() -> None:
    t = table()
    assert t.drift() is None  # the defaults measured once
    t.anchors.append(TableRow(config={"batch": 8, "mode": "a"}, outcome="ok",
                              costs=[1.65, 1.65], defaults=True))
    assert t.drift() == pytest.approx(0.1)
    assert t.best_cost() == pytest.approx(1.0)  # anchors are not rows of the grid


def test_drift_correction_scales_each_row_by_the_defaults_around_it() -> None:
    t = table()
    defaults = next(r for r in t.rows if r.defaults)
    defaults.measured_at = "2026-12-02T00:00:00Z"  # the defaults: 1.5, then 1.8 an hour later
    t.anchors.append(TableRow(config=defaults.config, outcome="ok", costs=[1.8, 1.8],
                              defaults=True, measured_at="2026-12-02T01:00:00Z"))
    early, middle, late = (next(r for r in t.rows if r.config == {"batch": b, "mode": "b"})
                           for b in (4, 8, 16))
    early.measured_at = "2026-11-30T00:00:00Z"  # before the first anchor: its factor
    middle.measured_at = "2026-12-02T00:30:00Z"  # half way: the defaults cost 1.65 then
    late.measured_at = None  # no time: as measured
    fixed = t.drift_corrected()
    by = {(r.config["batch"], r.config["mode"]): r for r in fixed.rows if not r.defaults}
    assert by[(4, "b")].costs == pytest.approx([c * 1.65 / 1.5 for c in early.costs])
    assert by[(8, "b")].costs == pytest.approx(middle.costs)
    assert by[(16, "b")].costs == late.costs
    assert next(r for r in fixed.rows if r.defaults).true_cost == pytest.approx(1.65)
    assert fixed.drift() == pytest.approx(0.0)
    assert t.drift() == pytest.approx(0.2)  # the table itself is left as measured


def test_rows_of_a_second_machine_are_scaled_by_the_defaults_measured_there() -> None:
    t = table()
    t.machine = "first cpu"
    defaults = next(r for r in t.rows if r.defaults)  # 1.5 on the first machine
    moved = next(r for r in t.rows if r.config == {"batch": 16, "mode": "b"})
    moved.machine = "second cpu"  # measured where everything costs 2x
    moved.costs = [c * 2 for c in moved.costs]
    t.anchors.append(TableRow(config=defaults.config, outcome="ok", costs=[3.0, 3.0],
                              defaults=True, machine="second cpu"))
    assert t.machines() == ["first cpu", "second cpu"]
    assert t.drift() is None  # the defaults measured once on each machine: no drift seen
    fixed = t.drift_corrected()
    again = next(r for r in fixed.rows if r.config == moved.config and not r.defaults)
    assert again.costs == pytest.approx([c / 2 for c in moved.costs])
    assert fixed.anchors[0].true_cost == pytest.approx(1.5)
    t.anchors.clear()  # no defaults measured on the second machine: it cannot be scaled
    with pytest.raises(ValueError, match="rows measured on second cpu but not the defaults"):
        t.drift_corrected()


def test_a_table_with_one_measurement_of_its_defaults_is_not_corrected() -> None:
    t = table()
    assert t.drift_corrected().rows == t.rows


def test_grid_order_measures_the_defaults_then_the_grid_in_order() -> None:
    t = table()
    run = replay(t, GRID_ORDER, seed=0, trials=16)
    # the defaults (batch 8, a), batch 1 (infeasible), 2 a-c, 4 a, then 4 b (1.4) 9th; batch
    # 8 a is the defaults, so 8 b (1.2) is 11th, 8 c, 16 a, then the best (16 b) 14th
    assert run.found[0] == pytest.approx(1.5)
    assert [run.trials_to(c) for c in (1.45, 1.25, 1.05)] == [9, 11, 14]
    assert replay(t, GRID_ORDER, seed=1, trials=16).found == run.found


def test_a_numeric_knob_is_asked_in_order_as_its_grid_values_index_or_a_log_range() -> None:
    knobs = table().knobs  # batch: 1 ... 64 (six values); mode: categorical
    for encoding, asked, got in [("ordinal", 2, 4), ("ordinal", 5, 64), ("log-range", 5, 4),
                                 ("log-range", 6, 8), ("log-range", 40, 64)]:
        trial = optuna.trial.FixedTrial({"batch": asked, "mode": "b"})
        assert suggest_config(trial, knobs, encoding=encoding) == {"batch": got, "mode": "b"}
        assert params_of({"batch": got, "mode": "b"}, knobs, encoding)["batch"] == (
            knobs["batch"].index(got) if encoding == "ordinal" else got)
    for encoding, kind in [("ordinal", optuna.distributions.IntDistribution),
                           ("log-range", optuna.distributions.IntDistribution),
                           ("categorical", optuna.distributions.CategoricalDistribution)]:
        study = optuna.create_study()
        suggest_config(study.ask(), knobs, encoding=encoding)
        assert isinstance(study.trials[0].distributions["batch"], kind)
        assert isinstance(study.trials[0].distributions["mode"],
                          optuna.distributions.CategoricalDistribution)


def test_every_encoding_replays_the_defaults_first_in_a_study_and_in_grid_order() -> None:
    for encoding in ENCODINGS:
        run = replay(table(), "tpe", seed=2, trials=8, encoding=encoding, startup=2)
        assert len(run.found) == 8
        assert run.found[0] == pytest.approx(1.5), encoding  # the defaults' grid point
        walked = replay(table(), GRID_ORDER, seed=0, trials=3, encoding=encoding)
        assert walked.found[0] == pytest.approx(1.5), encoding


def test_defaults_off_the_grid_still_cost_the_first_trial_and_can_be_the_pick() -> None:
    t = table()
    defaults = next(r for r in t.rows if r.defaults)
    defaults.config = {"batch": -1, "mode": "a"}  # "auto": no value of the grid
    defaults.costs = [0.9, 0.9]                   # cheaper than every grid point
    for sampler in ("tpe", GRID_ORDER):
        run = replay(t, sampler, seed=0, trials=6)
        assert len(run.found) == 6
        assert run.found[0] == run.picked[0] == pytest.approx(0.9), sampler
        assert run.picked[-1] == pytest.approx(0.9), sampler  # nothing on the grid beats them
    assert replay(t, GRID_ORDER, seed=0, trials=4).found[1:] == [pytest.approx(0.9)] * 3
