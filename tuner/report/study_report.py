"""A study's verdict, its terminal table, its best configuration as YAML and its plots."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
import yaml
from optuna.trial import TrialState
from rich.table import Table

from tuner.metrics import Interval, RatioVerdict, money
from tuner.study import FAILED_COST, RunFolder, TrialResult
from tuner.study.repeats import Remeasured, RemeasureOutcome
from tuner.study.results import NoiseFloor, StudySummary

log = logging.getLogger(__name__)


def study_verdict(engine: str, r: RemeasureOutcome | None, defaults: TrialResult | None,
                  best: TrialResult | None, floor: NoiseFloor | None = None) -> str:
    if best is None:
        return f"no configuration of {engine} met the SLOs"
    if defaults is None or not defaults.feasible:
        return (f"{engine}'s defaults met no load within the SLOs; the best configuration "
                f"(trial {best.number}) costs {money(best.cost_per_m_output_tokens)}/M output "
                "tokens")
    if r is not None and r.paired is not None and r.study_verdict is not None:
        return paired_text(engine, r.paired, r.paired_trial, r.study_verdict)
    if r is None or r.tuning_delta is None or r.winner is None:
        ratio = (defaults.cost_per_m_output_tokens or 0) / (best.cost_per_m_output_tokens or 1)
        return f"tuning {engine} saved {ratio:.2f}x in the search (not re-measured)"
    d = r.tuning_delta
    unmeasured = [c for c in r.candidates if c.cost is None and not c.defaults]
    if r.winner.defaults and unmeasured:
        why = "; ".join(unmeasured[0].failures[:1]) or "no run produced output"
        return (f"{engine}'s defaults were the cheapest of the configurations re-measured, but "
                f"trial {unmeasured[0].trial} (the search's "
                f"{'best' if unmeasured[0].trial == best.number else 'runner-up'}) could not "
                f"be re-measured ({why}): no verdict on it")
    held = ""
    if r.winner.slo_passed_runs < r.winner.runs:
        held = (f" (but it met the SLOs at no load on {not_met(r.winner)} of {r.winner.runs} "
                "fresh starts)")
    if r.winner.defaults:
        w = r.winner.cost.value if r.winner.cost else float("inf")
        unheld = [c for c in r.candidates if not c.defaults and c.cost and c.cost.value < w
                  and c.slo_passed_runs < c.runs]
        for c in unheld[:1]:
            held += (f" (trial {c.trial} cost less, but it met the SLOs at no load on "
                     f"{not_met(c)} of {c.runs} fresh starts)")
        return (f"{engine}'s defaults stayed the cheapest on fresh starts: tuning found "
                f"nothing better{held}")
    base = r.defaults
    if base is not None and base.slo_passed_runs < base.runs and not held:
        held = (f" (the defaults met the SLOs at no load on {not_met(base)} of {base.runs} "
                "fresh starts, so the saving is, if anything, larger)")
    if floor is not None and d.low > 1 and d.value - 1 < floor.value:
        held += (f" (less than the noise floor of {floor.value:.1%}, {floor.source}: not "
                 "resolved)")
    return saved_text(engine, d) + held


RERUN = "rerun with more starts (--race N, or more --repeats)"


def paired_text(engine: str, v: RatioVerdict, trial: int | None, kind: str,
                against: str = "the defaults", rerun: str = RERUN) -> str:
    """The study's verdict, side by side with ``against`` (the defaults, or the user's current
    configuration) on fresh starts: a win, nothing to gain, or unresolved, with the ratio's
    interval."""
    r = f"{v.resolution:.0%}"
    if kind == "win":
        return (f"tuned {engine} (trial {trial}) beats {against} by {v.interval_text()}, "
                f"resolved at ±{r}")
    if kind == "no_gain":
        return (f"no configuration of {engine} beats {against} by more than {r} (best: "
                f"trial {trial}, {v.interval_text()})")
    return (f"unresolved: the best configuration of {engine} (trial {trial}) against "
            f"{against} {v.interval_text()} after {v.pairs} pairs of fresh starts, not decided "
            f"at ±{r}; {rerun}")


def baseline_text(engine: str, r: RemeasureOutcome | None, baseline: TrialResult | None,
                  best: TrialResult | None) -> str | None:
    """The verdict against the user's current configuration (``tune --baseline``), beside
    the one against the defaults; None without a baseline."""
    if baseline is None:
        return None
    mine = f"your current configuration ({baseline.baseline}, trial {baseline.number})"
    if not baseline.feasible:
        return f"{mine} met no load within the SLOs ({baseline.outcome}: {baseline.detail})"[:300]
    if r is not None and r.against_baseline is not None and r.baseline_verdict is not None:
        return paired_text(engine, r.against_baseline, r.against_baseline_trial,
                           r.baseline_verdict, against=f"your current configuration "
                           f"({baseline.baseline})")
    if best is None or best.number == baseline.number:
        return f"{mine} was the cheapest configuration of the search (not re-measured)"
    ratio = (baseline.cost_per_m_output_tokens or 0) / (best.cost_per_m_output_tokens or 1)
    return (f"tuned {engine} (trial {best.number}) against {mine}: {ratio:.2f}x in the search "
            "(not re-measured, no interval)")


def not_met(m: Remeasured) -> int:
    """Fresh starts on which ``m`` met the SLOs at no load."""
    return m.runs - m.slo_passed_runs


def saved_text(engine: str, delta: Interval) -> str:
    """What tuning ``engine`` saved, with its interval, flagged when the interval includes 1."""
    sure = "" if delta.low > 1 else " (the interval includes 1: not a sure gain)"
    return f"tuning {engine} saved {delta.value:.2f}x ({delta.low:.2f}-{delta.high:.2f}){sure}"


def best_config_yaml(engine: str, winner: Remeasured | None, best: TrialResult | None) -> str:
    """The chosen configuration; for the defaults, each knob's default (``null``: the engine
    decides it itself), as the engine ran with none of them set."""
    config = winner.config if winner else (best.config if best else {})
    defaults = winner.defaults if winner else bool(best and best.defaults)
    note = ("# null: the engine decides this knob itself\n"
            if any(v is None for v in config.values()) else "")
    return note + yaml.safe_dump({"engine": engine, "defaults": defaults, "config": config},
                                 sort_keys=True)


def final_table(summary: StudySummary) -> Table:
    t = Table(title=f"{summary.study}: defaults vs best", title_justify="left")
    t.add_column("", no_wrap=True)
    t.add_column("$/M output tokens (95% CI)", justify="right", no_wrap=True)
    for col in ("load", "p95 TTFT ms", "p95 ITL ms"):
        t.add_column(col, justify="right")
    rm = summary.remeasure
    rows: list[tuple[str, Remeasured | None, TrialResult | None]] = [
        ("defaults", rm.defaults if rm else None, summary.defaults_trial)]
    if summary.baseline_trial is not None:
        rows.append((f"yours ({summary.baseline_trial.baseline})", rm.baseline if rm else None,
                     summary.baseline_trial))
    rows.append(("best", rm.winner if rm else None, summary.best_trial))
    for label, remeasured, trial in rows:
        if remeasured is not None and remeasured.cost is not None:
            cost = f"${remeasured.cost.text('{:.3g}')}"
            ttft = _spread(remeasured.ttft_p95_ms)
            itl = _spread(remeasured.itl_p95_ms)
            load = capacity_text(remeasured.capacities)
            label = f"{label} (trial {remeasured.trial})"
        elif trial is not None and trial.feasible and trial.best is not None:
            cost = money(trial.cost_per_m_output_tokens)
            ttft = f"{trial.best.ttft_ms.p95:.1f}"
            itl = f"{trial.best.itl_ms.p95:.1f}"
            load = trial.load_text()
            label = f"{label} (trial {trial.number})"
        else:
            cost = ttft = itl = load = "-"
            if trial is not None:
                label = f"{label} (trial {trial.number}: {trial.outcome})"
        t.add_row(label, cost, load, ttft, itl)
    paired = paired_delta(rm)
    if paired is not None:  # the interval the verdict is drawn from: start-to-start spread in
        t.add_row("tuning delta", paired.interval_text(), "", "", "")
    elif summary.tuning_delta is not None:
        t.add_row("tuning delta", summary.tuning_delta.text("{:.2f}") + "x", "", "", "")
    return t


def paired_delta(rm: RemeasureOutcome | None) -> RatioVerdict | None:
    """The winner's side-by-side verdict against the defaults on paired fresh starts, if it
    had one. Its interval holds the start-to-start spread; the bootstrap over starts and
    requests of ``tuning_delta`` does not (two starts are two values to resample), so where
    both exist the table shows this one and agrees with the verdict printed under it."""
    if rm is None or rm.winner is None or rm.winner.defaults:
        return None
    return next((f.verdict for f in rm.verdicts or [] if f.trial == rm.winner.trial), None)


def capacity_text(values: list[float]) -> str:
    """The capacities of fresh starts: one figure, or the lowest to the highest."""
    if not values:
        return "-"
    return " to ".join(f"{v:.3g}" for v in sorted({min(values), max(values)}))


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{min(values):.1f} to {max(values):.1f}"  # a space lets narrow terminals wrap it


def write_plots(study: optuna.Study, folder: RunFolder) -> dict[str, Path]:
    """Optuna's plots over the feasible trials (infeasible trials have no cost to plot)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as ovm

    feasible = [t for t in study.get_trials(states=(TrialState.COMPLETE,))
                if t.value is not None and t.value < FAILED_COST]
    plots: dict[str, Path] = {}
    if not feasible:
        return plots
    view = optuna.create_study(direction="minimize")
    view.add_trials(feasible)
    folder.plots.mkdir(parents=True, exist_ok=True)
    makers: dict[str, Callable[[optuna.Study], Any]] = {
        "optimization_history": ovm.plot_optimization_history,
        "param_importances": ovm.plot_param_importances,
        "parallel_coordinate": ovm.plot_parallel_coordinate,
    }
    for name, make in makers.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                make(view)
            path = folder.plot(name)
            plt.gcf().set_size_inches(10, 6)
            plt.savefig(path, bbox_inches="tight", dpi=100)
            plots[name] = path
        except (ValueError, RuntimeError, ZeroDivisionError) as exc:
            log.info("plot %s skipped: %s", name, exc)
        finally:
            plt.close("all")
    return plots
