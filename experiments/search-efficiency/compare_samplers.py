"""Replay every sampler against a measured table, many seeds each, and print how they did.

For each sampler (and grid order, TPE without constraints, and each with intensification),
over ``--seeds`` replayed studies: the trials needed to first measure a configuration within
5% of the table's best (median with a 95% bootstrap interval over the seeds, and 90th
percentile; a study that never gets there counts as more than the budget), the true cost of
the pick after 10 and 20 trials relative to the table's best (median), and how often the
final pick is within 5% of the best once its noise is removed (with its 95% Wilson interval).
A table whose defaults were measured again while it was built (its anchors) is
replayed twice: as measured, and with each row scaled by the defaults' drift at its time. A
table measured on several machines is replayed only scaled (each row by the defaults on its
own machine): as measured, it would compare machines.
``--encoding`` says how numeric knobs are asked (``tuner.study.replay.ENCODINGS``: ordinal,
the default; log-range, as a study's space asks sizes; categorical, as the replay did before
2026-12-02). ``--startup N`` sets the random trials before TPE and GP
model (``tune``'s: 5); ``--samplers`` limits the variants to those named as printed.
After each reading it prints the issue's targets for ``tune``'s default sampler, met or
missed. Runs in seconds to minutes; its output is kept in results-<engine>*.txt.

Run: .venv/bin/python experiments/search-efficiency/compare_samplers.py [--table ...]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tuner.study import (
    DEFAULT_SAMPLER,
    ENCODINGS,
    GRID_ORDER,
    SAMPLERS,
    STARTUP_TRIALS,
    MeasuredTable,
    replay,
)

HERE = Path(__file__).parent
WITHIN = 1.05


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", type=Path, default=HERE / "table-llamacpp.json")
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--budget", type=int, default=20)
    parser.add_argument("--encoding", choices=ENCODINGS, default="ordinal",
                        help="how numeric knobs are asked")
    parser.add_argument("--startup", type=int, default=STARTUP_TRIALS,
                        help="random trials before TPE and GP model")
    parser.add_argument("--samplers", default="",
                        help="comma-separated variants to replay, as the table names them "
                        "(e.g. 'gp,tpe,random,grid order,gp + intensify'); default: all")
    args = parser.parse_args()
    table = MeasuredTable.load(args.table)
    feasible = sum(r.feasible for r in table.rows if not r.defaults)
    how = Replay(args.seeds, args.budget, args.encoding, args.startup,
                 [n for n in args.samplers.split(",") if n])
    machines = table.machines()
    print(f"table: {args.table.name}, {table.engine} {table.engine_version}, measured on "
          + "; ".join(f"{m} ({sum(table.machine_of(r) == m for r in table.rows)} rows)"
                      for m in machines))
    print(f"grid: {table.grid_size()} configurations ({feasible} met the SLOs), knobs "
          f"{', '.join(table.knobs)}; {args.seeds} seeds, budget {args.budget} trials; "
          f"numeric knobs asked {how.encoding}; {args.startup} "
          "random trials before TPE and GP model")
    if len(machines) == 1:
        compare(table, "as measured", how)
    drift = table.drift()
    if drift is not None or len(machines) > 1:
        print(f"\ndrift: the defaults' mean cost moved {drift or 0:.1%} at most on one "
              f"machine over the build ({1 + len(table.anchors)} measurements of them on "
              f"{len(machines)} machine(s)); each row scaled by the defaults' cost on its "
              "machine at its time, interpolated between those measurements:")
        compare(table.drift_corrected(), "drift-corrected", how)


@dataclass(frozen=True)
class Replay:
    """How every variant is replayed: seeds, budget, the knobs' encoding, startup trials, and
    which variants (empty: all)."""

    seeds: int
    budget: int
    encoding: str
    startup: int
    only: list[str]

    def wanted(self, shown: str) -> bool:
        return not self.only or shown in self.only


def compare(table: MeasuredTable, label: str, how: Replay) -> None:
    """Print the table's best configurations, then how every sampler did replayed on it."""
    best = table.best_cost()
    ranked = sorted((r for r in table.lookup().values() if r.feasible),
                    key=lambda r: r.true_cost)
    within = sum(r.true_cost <= best * WITHIN for r in ranked)
    defaults = next((table.lookup().get(table.key(r.config), r) for r in table.rows
                     if r.defaults), None)  # their grid point, as a study measures them
    print(f"\n{label}: best true cost {best:.4g}; {within} configuration(s) within 5% of it"
          + (f"; the defaults {defaults.true_cost / best:.3f} x best" if defaults else ""))
    for r in ranked[:5]:
        print(f"  {r.true_cost / best:.3f}  {r.config}  (starts: "
              f"{', '.join(f'{c:.4g}' for c in r.costs)})")
    print(f"{'sampler':<28}{'to 5%: p50 (95% CI)':>20}{'p90':>5}{'in 10 (95% CI)':>17}"
          f"{'pick@10':>9}{'pick@20':>9}{'final within 5% (95% CI)':>26}")
    variants = [(name, True, False) for name in SAMPLERS] + [(GRID_ORDER, True, False)]
    variants += [("tpe", False, False)] + [(name, True, True) for name in SAMPLERS]
    done: dict[tuple[str, bool, bool], Outcome] = {}
    for name, constraints, intensify in variants:
        shown = ("grid order" if name == GRID_ORDER else name) + (
            "" if constraints else " (no constraints)") + (" + intensify" if intensify else "")
        if not how.wanted(shown):
            continue
        budget = how.budget
        runs = [replay(table, name, seed=s, trials=budget, constraints=constraints,
                       intensify=intensify, encoding=how.encoding, startup=how.startup)
                for s in range(how.seeds)]
        reach = [r.trials_to(best * WITHIN) or budget + 1 for r in runs]
        at = {k: float(np.median([r.picked[min(k, len(r.picked)) - 1] / best for r in runs]))
              for k in (10, 20)}
        hits = sum(r.picked[-1] <= best * WITHIN for r in runs)
        found = [r for r in runs if r.trials_to(best * WITHIN) is not None]
        kept = sum(r.picked[-1] <= best * WITHIN for r in found) / len(found) if found else 0.0
        in_10 = sum(r <= 10 for r in reach)
        done[(name, constraints, intensify)] = Outcome(float(np.median(reach)), at[10], at[20],
                                                       hits / len(runs), kept,
                                                       in_10 / len(runs))
        low, high = median_interval(reach)
        share, share_low, share_high = wilson(hits, len(runs))
        ten, ten_low, ten_high = wilson(in_10, len(runs))
        p90 = int(np.percentile(reach, 90))
        print(f"{shown:<28}{np.median(reach):>9.1f} ({low:>4.1f}-{high:>4.1f}){p90:>5}"
              f"{ten:>6.0%} ({ten_low:>3.0%}-{ten_high:>4.0%})"
              f"{at[10]:>9.3f}{at[20]:>9.3f}{share:>13.0%} ({share_low:>3.0%}-{share_high:>4.0%})",
              flush=True)
    print_targets(done, table.grid_size())


@dataclass(frozen=True)
class Outcome:
    """One variant over the seeds: median trials to 5%, median pick after 10 and 20 trials
    (x best), share of final picks within 5%, and that share among the seeds that measured one."""

    to_5: float
    pick_10: float
    pick_20: float
    final: float
    kept: float
    """Of the seeds that measured a configuration within 5%, the share whose final pick is
    one: what noise, not the search, cost."""
    in_10: float = 0.0
    """The share of seeds that measured a configuration within 5% in at most 10 trials."""


def print_targets(done: dict[tuple[str, bool, bool], Outcome], grid: int) -> None:
    """The issue's targets for the default sampler, met or missed, where the variants they
    name were replayed."""
    ours = done.get((DEFAULT_SAMPLER, True, False))
    intensified = done.get((DEFAULT_SAMPLER, True, True))
    rand = done.get(("random", True, False))
    lines = []
    if ours is not None:
        bound = 0.1 * grid
        lines.append(f"{DEFAULT_SAMPLER} reaches 5% in a median of <= 10% of the table "
                     f"({bound:.1f} trials): {ours.to_5:.1f}, "
                     + ("met" if ours.to_5 <= bound else "missed"))
    if ours is not None:
        lines.append(f"{DEFAULT_SAMPLER} measures one within 5% in <= 10 trials in >= 80% of "
                     f"seeds: {ours.in_10:.0%}"
                     + ("" if rand is None else f" (random {rand.in_10:.0%})") + ", "
                     + ("met" if ours.in_10 >= 0.8 else "missed"))
    if ours is not None and rand is not None:
        beats = ours.pick_10 < rand.pick_10 and ours.pick_20 < rand.pick_20
        lines.append(f"{DEFAULT_SAMPLER} beats random on the median pick at 10 and 20 trials: "
                     f"{ours.pick_10:.3f} vs {rand.pick_10:.3f}, {ours.pick_20:.3f} vs "
                     f"{rand.pick_20:.3f}, " + ("met" if beats else "missed"))
    if intensified is not None:
        lines.append(f"{DEFAULT_SAMPLER} + intensify picks within 5% in >= 90% of seeds: "
                     f"{intensified.final:.0%}, "
                     + ("met" if intensified.final >= 0.9 else "missed")
                     + f" (of the seeds that measured one, {intensified.kept:.0%} picked one"
                     + ("" if ours is None else f"; without intensification {ours.kept:.0%}")
                     + ")")
    if lines:
        print("targets (tune's default sampler):\n" + "\n".join(f"  {line}" for line in lines))


def median_interval(values: list[int], n: int = 4000) -> tuple[float, float]:
    """A 95% bootstrap percentile interval of the median over seeds: whether two samplers'
    medians differ by more than the seeds drawn."""
    rng = np.random.default_rng(0)
    medians = np.median(rng.choice(values, size=(n, len(values)), replace=True), axis=1)
    return float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float, float]:
    """The share of ``hits`` in ``n`` with its 95% Wilson score interval."""
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return p, max(0.0, centre - half), min(1.0, centre + half)


if __name__ == "__main__":
    main()
