"""Offline replay of a search against a measured table: how many trials a sampler needs.

A table holds every configuration of a grid measured on fresh engine starts (each repeat's
cost, or the outcome that stopped it). A replayed study asks its sampler for a configuration,
and the "trial" returns one of that configuration's own measured costs, in a random order (its
measurement noise; measured again, it gives another of its repeats), or its failure; so a
thousand studies replay in seconds what the table took hours to measure. As in ``tune``: the
defaults go first (enqueued when they are a grid point; when they are not, as llama-server's
automatic slot count is no value of a grid, they still cost the first trial and can be the
pick, and the sampler hears nothing of them), infeasible trials carry constraints, and
configurations rejected before launch do not count toward the budget. With ``intensify``, a
trial that looks better than the incumbent is measured again (counted toward the budget) before
it can become the incumbent, and the incumbent is the configuration with the lowest mean of its
measurements. Every decision (the value told, the budget, the challenge and its confirmation)
is :mod:`tuner.study.policy`'s, as in ``tune``'s loop. A table built over hours on a machine
whose speed drifted, or over sessions on several machines, can be scaled by the defaults
measured again on each machine while it was built (``drift_corrected``).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from pydantic import BaseModel, Field

from tuner.study.policy import FAILED_COST, budget_spent, challenges, confirm, told_value
from tuner.study.samplers import STARTUP_TRIALS, make_sampler

OFF_GRID_DEFAULTS = ("defaults, off the grid",)
"""The key of the defaults in a replay when they are no grid configuration."""

GRID_ORDER = "grid"
"""Not a sampler of ``tune``: the grid's configurations one after another, in the order of its
knobs' values (the defaults first), as a hand-run grid goes."""


class TableRow(BaseModel):
    """One configuration of the grid: its measured costs, or why it has none."""

    config: dict[str, Any]
    outcome: str = Field(description="ok, or the failure that stopped every repeat")
    costs: list[float] = Field(default_factory=list, description="$/M output tokens per repeat")
    loads: list[float] = Field(default_factory=list)
    binding: list[str | None] = Field(default_factory=list)
    rejected_before_launch: bool = False
    defaults: bool = False
    measured_at: str | None = Field(default=None, description="when its last start ended (UTC)")
    machine_speed: dict[str, float] = Field(default_factory=dict, description=(
        "the machine's own speed just before the row, engine stopped (matmul GFLOP/s, "
        "memory copy GB/s): whether a drift of the anchors is the machine's"))
    machine: str = Field(default="", description=(
        "the CPU it was measured on (tuner.host.cpu_identity); empty: the table's machine"))
    steal_s: list[float] = Field(default_factory=list, description=(
        "seconds the hypervisor ran something else on each core while the row was measured "
        "(empty: not recorded): whether a start's outlying cost was the machine's"))

    @property
    def feasible(self) -> bool:
        return bool(self.costs)

    @property
    def true_cost(self) -> float:
        """The mean of its repeats: the cost with the measurement noise averaged out."""
        return float(np.mean(self.costs)) if self.costs else float("inf")


class MeasuredTable(BaseModel):
    """A grid (each knob's values) and its rows, with where and how it was measured."""

    engine: str
    knobs: dict[str, list[Any]]
    rows: list[TableRow]
    workload: str = ""
    command: str = ""
    machine: str = Field(default="", description="the CPU of its first rows")
    engine_version: str = ""
    anchors: list[TableRow] = Field(default_factory=list, description=(
        "the defaults measured again while the table was built: how far the machine's speed "
        "drifted between its first row and its last, and on each further machine, the "
        "defaults measured there before its first row"))
    workloads: dict[str, str] = Field(default_factory=dict, description=(
        "each further machine's workload (its own SLOs: the rule applied on that machine)"))

    @classmethod
    def load(cls, path: Path) -> MeasuredTable:
        return cls.model_validate(json.loads(path.read_text()))

    def key(self, config: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(config.get(k) for k in self.knobs)

    def lookup(self) -> dict[tuple[Any, ...], TableRow]:
        return {self.key(r.config): r for r in self.rows if not r.defaults}

    def grid_size(self) -> int:
        return int(np.prod([len(v) for v in self.knobs.values()]))

    def missing(self) -> int:
        return self.grid_size() - len(self.lookup())

    def best_cost(self) -> float:
        """The lowest true cost of a grid configuration (the defaults' own row, measured
        apart from their grid point, is not one a study can find)."""
        return min(r.true_cost for r in self.lookup().values() if r.feasible)

    def machine_of(self, row: TableRow) -> str:
        return row.machine or self.machine

    def machines(self) -> list[str]:
        """The machines its rows and anchors were measured on, the first one first."""
        return list(dict.fromkeys(self.machine_of(r) for r in [*self.rows, *self.anchors]))

    def drift(self) -> float | None:
        """How far the defaults' mean cost moved on one machine while the table was built:
        highest / lowest - 1, the largest of its machines' (None: measured once on each)."""
        drifts = [max(m) / min(m) - 1 for m in (
            [r.true_cost for r in self._defaults_measured(machine)]
            for machine in self.machines()) if len(m) > 1]
        return max(drifts) if drifts else None

    def drift_corrected(self) -> MeasuredTable:
        """The table with each row's costs scaled as the defaults' cost moved while it was
        built, on its own machine.

        The defaults' measurements on a machine (their row and the anchors) give its cost
        factor over time: a row measured at time t is scaled by (the defaults' mean on the
        table's first machine) / (the defaults' cost on the row's machine at t, interpolated
        between the two measurements of them around t; before the first or after the last,
        the nearest; a row with no time, their mean there). The drift is taken to be the
        machine's and the same for every configuration, and so is a machine's speed against
        another's. A machine with rows but no measurement of the defaults cannot be scaled
        (ValueError).
        """
        curves: dict[str, tuple[np.ndarray, np.ndarray, float]] = {}
        for machine in self.machines():
            measured = self._defaults_measured(machine)
            timed = sorted((_seconds(r.measured_at), r.true_cost)
                           for r in measured if r.measured_at)
            times, costs = np.array(timed).T if timed else (np.array([]), np.array([]))
            mean = float(np.mean([r.true_cost for r in measured])) if measured else 0.0
            curves[machine] = (times, costs, mean)
        reference = curves[self.machines()[0]][2] if curves else 0.0

        def corrected(row: TableRow) -> TableRow:
            times, costs, mean = curves[self.machine_of(row)]
            if not row.costs:
                return row.model_copy(deep=True)
            if not mean:
                raise ValueError(f"rows measured on {self.machine_of(row)} but not the "
                                 "defaults: they cannot be scaled")
            at = (float(np.interp(_seconds(row.measured_at), times, costs))
                  if row.measured_at and len(times) else mean)
            factor = reference / at
            return row.model_copy(update={"costs": [c * factor for c in row.costs]}, deep=True)

        return self.model_copy(update={"rows": [corrected(r) for r in self.rows],
                                       "anchors": [corrected(r) for r in self.anchors]},
                               deep=True)

    def _defaults_measured(self, machine: str) -> list[TableRow]:
        return [r for r in [*self.rows, *self.anchors]
                if r.defaults and r.feasible and self.machine_of(r) == machine]


def _seconds(stamp: str | None) -> float:
    """Seconds since the epoch of a row's UTC time stamp (2026-12-02T00:29:47Z)."""
    return datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=UTC).timestamp()


@dataclass
class Replayed:
    """One replayed study: the true cost of what it had found and picked after each trial."""

    found: list[float] = field(default_factory=list)
    picked: list[float] = field(default_factory=list)

    def trials_to(self, target: float) -> int | None:
        """Trials until a configuration with true cost <= target was first measured."""
        return next((i + 1 for i, c in enumerate(self.found) if c <= target), None)


def replay(table: MeasuredTable, sampler: str, *, seed: int, trials: int,
           constraints: bool = True, intensify: bool = False, encoding: str = "ordinal",
           startup: int = STARTUP_TRIALS) -> Replayed:
    """Replay one study of ``trials`` launched trials (re-measurements included) with the
    sampler of ``tune`` called ``sampler`` (modelling after ``startup`` random trials), or in
    grid order (``GRID_ORDER``), its numeric knobs asked as ``encoding`` says (``ENCODINGS``)."""
    if table.missing():
        raise ValueError(f"the table lacks {table.missing()} of {table.grid_size()} grid "
                         "configurations; replay a complete grid")
    rows = table.lookup()
    rng = np.random.default_rng(seed)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    in_order = sampler == GRID_ORDER
    study = optuna.create_study(direction="minimize", sampler=(
        optuna.samplers.RandomSampler(seed=seed) if in_order
        else make_sampler(sampler, seed=seed, trials=trials, startup=startup)))
    defaults = next((r for r in table.rows if r.defaults), None)
    first: tuple[Any, ...] | None = None
    off_grid: tuple[Any, ...] | None = None
    if defaults is not None and table.key(defaults.config) in rows:
        first = table.key(defaults.config)
        study.enqueue_trial(params_of(defaults.config, table.knobs, encoding))
    elif defaults is not None:
        off_grid = OFF_GRID_DEFAULTS
        rows = {**rows, off_grid: defaults}
    if in_order:
        for values in itertools.product(*table.knobs.values()):
            if values != first:
                study.enqueue_trial(params_of(dict(zip(table.knobs, values, strict=True)),
                                              table.knobs, encoding))
    seen: dict[tuple[Any, ...], list[float]] = {}
    out = Replayed()
    launched = rejected = 0
    best_found = float("inf")

    draws: dict[int, list[float]] = {}

    def measure(row: TableRow) -> float:
        """The next of the row's repeats, in a random order: measuring a configuration again
        gives another of its fresh starts, as long as the table has one."""
        left = draws.setdefault(id(row), [])
        if not left:
            left.extend(rng.permutation(row.costs).tolist())
        return float(left.pop())

    def record(best: float, row: TableRow) -> float:
        """One launched measurement: what has been found and what would be picked now."""
        best = min(best, row.true_cost)
        out.found.append(best)
        out.picked.append(_pick(seen, rows))
        return best

    if off_grid is not None and trials > 0:  # tune's trial 0, which no grid point is
        launched += 1
        if rows[off_grid].feasible:
            seen[off_grid] = [measure(rows[off_grid])]
        best_found = record(best_found, rows[off_grid])
    while not budget_spent(launched=launched, rejected=rejected, trials=trials):
        trial = study.ask()
        config = suggest_config(trial, table.knobs, encoding=encoding)
        row = rows[table.key(config)]
        if constraints:
            trial.set_constraint("feasible", 0.0 if row.feasible else 1.0)
        if row.rejected_before_launch:
            rejected += 1
            study.tell(trial, told_value(None, feasible=False))
            continue
        launched += 1
        value = measure(row) if row.feasible else FAILED_COST
        key = table.key(config)
        if row.feasible:
            seen.setdefault(key, []).append(value)
            incumbent = min((float(np.mean(v)) for k, v in seen.items() if k != key),
                            default=None)
            if (challenges(intensify=intensify, cost=value, incumbent=incumbent)
                    and launched < trials):
                launched += 1  # the challenger is measured again before it can win
                again = measure(row)
                seen[key].append(again)
                value = told_value(confirm(value, again).cost, feasible=True)
                best_found = record(best_found, row)
        study.tell(trial, value)
        best_found = record(best_found, row)
    return out


ENCODINGS = ("ordinal", "log-range", "categorical")
"""How a replay asks a numeric knob of the grid (booleans and names are always categorical):
``ordinal``, the index of its grid value as an int range, so every grid value is as likely to
a random draw as with a categorical and a sampler that models order (GP, TPE) sees it;
``log-range``, as the engines' search spaces declare sizes (an int range over the grid's
values on a log scale), answered by the nearest grid value: closest to a study, but a grid
value's share of the range (half a step at either end) sets how often a random draw lands on
it; ``categorical``, its grid values unordered."""


def suggest_config(trial: optuna.Trial, knobs: dict[str, list[Any]], *,
                   encoding: str = "ordinal") -> dict[str, Any]:
    """A grid configuration asked of ``trial``, its numeric knobs asked as ``encoding`` says
    (``ENCODINGS``)."""
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r}; use one of: {', '.join(ENCODINGS)}")
    config = {}
    for name, values in knobs.items():
        if encoding == "categorical" or not _numeric(values):
            config[name] = trial.suggest_categorical(name, values)
        elif encoding == "ordinal":
            ordered = sorted(values)
            config[name] = ordered[trial.suggest_int(name, 0, len(ordered) - 1)]
        else:
            low, high, log = min(values), max(values), min(values) > 0
            asked: float = (trial.suggest_int(name, low, high, log=log)
                            if all(isinstance(v, int) for v in values)
                            else trial.suggest_float(name, low, high, log=log))
            scale = np.log if log else (lambda v: v)
            config[name] = min(values, key=lambda v: abs(scale(v) - scale(asked)))
    return config


def params_of(config: dict[str, Any], knobs: dict[str, list[Any]], encoding: str
              ) -> dict[str, Any]:
    """The parameters ``suggest_config`` asks to get the grid configuration ``config`` (to
    enqueue it)."""
    return {k: sorted(v).index(config[k]) if encoding == "ordinal" and _numeric(v)
            else config[k] for k, v in knobs.items()}


def _numeric(values: list[Any]) -> bool:
    return len(values) > 1 and all(isinstance(v, int | float) and not isinstance(v, bool)
                                   for v in values)


def _pick(seen: dict[tuple[Any, ...], list[float]], rows: dict[tuple[Any, ...], TableRow]
          ) -> float:
    """The true cost of the configuration the study would pick now (lowest measured mean)."""
    if not seen:
        return float("inf")
    key = min(seen, key=lambda k: float(np.mean(seen[k])))
    return rows[key].true_cost
